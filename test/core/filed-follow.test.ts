// The filer's side of the inbox decided in the core (docs/decisions/0011,
// 0026, 0031, 0086, 0110): the compiled `filedDecisionVerdict` and
// `filedStartFollowVerdict` against the reference model on every fact, the
// cases the decisions spell out, and the host's reading of what it polled
// (`filedDecisionFactsOf`, `filedStartFollowFactsOf`) through the core
// against remote-resume.ts's and remote-start.ts's former rules, written
// out as they stood, over every kind, state, row and revision.

import { beforeAll, expect, it } from "vitest";
import { FiledDecisionFact as D, FiledFollowVerdict as V, FiledStartFollowFact as S } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { filedDecisionFactsOf, filedStartFollowFactsOf } from "../../host/runtime/filed-follow.js";
import type { DecisionState } from "../../host/store/inbox-records.js";
import type { ExecutionRow } from "../../host/store/records.js";
import { filedDecisionVerdictFor, filedStartFollowVerdictFor } from "../model/reference-filed-follow.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdicts are the model's rules for every fact", () => {
  for (let facts = 0; facts <= D.End + 1; facts += 1) expect(core.filedDecisionVerdict(facts), `decision facts ${facts}`).toBe(filedDecisionVerdictFor(facts));
  for (let facts = 0; facts <= S.End + 1; facts += 1)
    expect(core.filedStartFollowVerdict(facts), `start facts ${facts}`).toBe(filedStartFollowVerdictFor(facts));
  expect(core.filedDecisionVerdict(0xffff_ffff)).toBe(V.None);
  expect(core.filedStartFollowVerdict(0xffff_ffff)).toBe(V.None);
});

it("a decision: refused settles; unapplied with its execution ended, a cancel settles and an approval never claimed is refused; applied, a terminal row settles and a later suspension is told", () => {
  expect(core.filedDecisionVerdict(D.Refused | D.RowFound)).toBe(V.SettleRefused);
  expect(core.filedDecisionVerdict(D.Cancel | D.Claimed | D.RowFound | D.RowTerminal)).toBe(V.SettleEnded);
  expect(core.filedDecisionVerdict(D.RowFound | D.RowTerminal)).toBe(V.RefuseUnapplied);
  // Claimed: it may have landed unmarked; a retry reopens an ended execution.
  expect(core.filedDecisionVerdict(D.Claimed | D.RowFound | D.RowTerminal)).toBe(V.Follow);
  expect(core.filedDecisionVerdict(D.Retry | D.RowFound | D.RowTerminal)).toBe(V.Follow);
  expect(core.filedDecisionVerdict(D.Applied)).toBe(V.SettleEnded);
  expect(core.filedDecisionVerdict(D.Retry | D.Applied | D.RowFound | D.RowTerminal)).toBe(V.SettleEnded);
  expect(core.filedDecisionVerdict(D.Applied | D.RowFound | D.RowSuspended | D.SuspendedLater)).toBe(V.AnnounceSuspended);
  expect(core.filedDecisionVerdict(D.Applied | D.RowFound | D.RowSuspended)).toBe(V.Follow);
  // Cannot hold: two kinds, two states, a row's state without the row.
  expect(core.filedDecisionVerdict(D.Cancel | D.Retry)).toBe(V.None);
  expect(core.filedDecisionVerdict(D.Claimed | D.Applied)).toBe(V.None);
  expect(core.filedDecisionVerdict(D.RowTerminal)).toBe(V.None);
  expect(core.filedDecisionVerdict(D.RowFound | D.SuspendedLater)).toBe(V.None);
});

it("a start: an observer settles from a terminal or suspended row, the Run once terminal; no row: refused, gone, or still filed", () => {
  expect(core.filedStartFollowVerdict(S.Observer | S.RowFound | S.RowSuspended)).toBe(V.SettleFromRow);
  expect(core.filedStartFollowVerdict(S.RowFound | S.RowTerminal | S.Filed)).toBe(V.SettleEnded);
  expect(core.filedStartFollowVerdict(S.RowFound | S.RowSuspended | S.SuspendedLater)).toBe(V.AnnounceSuspended);
  expect(core.filedStartFollowVerdict(S.RowFound)).toBe(V.Follow);
  expect(core.filedStartFollowVerdict(S.Filed | S.Refused)).toBe(V.SettleRefused);
  expect(core.filedStartFollowVerdict(0)).toBe(V.RefuseGone);
  expect(core.filedStartFollowVerdict(S.Observer)).toBe(V.SettleFromRow);
  expect(core.filedStartFollowVerdict(S.Filed)).toBe(V.FollowFiled);
  expect(core.filedStartFollowVerdict(S.Queued)).toBe(V.FollowFiled);
  expect(core.filedStartFollowVerdict(S.Refused)).toBe(V.None);
});

const STATUSES = [undefined, "terminal", "suspended", "running", "queued"] as const;
const REVISIONS = [4, 5, 6];
const ANNOUNCED = 5;

function rowOf(status: (typeof STATUSES)[number], revision: number): ExecutionRow | undefined {
  return status === undefined ? undefined : ({ executionId: "e1", agentId: "a1", status, revision } as unknown as ExecutionRow);
}

/** remote-resume.ts's `judge` before 0110, as it stood: what it did (the
 * applied callback, the poll's "moved" answer aside). */
function decisionStepBefore(kind: "approval" | "cancel" | "retry", state: DecisionState, row: ExecutionRow | undefined): string {
  if (state === "refused") return "settle refused";
  const unapplied = kind === "cancel" ? state !== "applied" : kind === "approval" && state === "filed";
  if (unapplied && row?.status === "terminal") return kind === "cancel" ? "settle ended" : "refuse unapplied";
  if (state !== "applied") return "follow";
  if (row === undefined || row.status === "terminal") return "settle ended";
  if (row.status === "suspended" && row.revision > ANNOUNCED) return "announce";
  return "follow";
}

/** remote-start.ts's `judge` before 0110, as it stood (after the steps'
 * events). */
function startStepBefore(observer: boolean, row: ExecutionRow | undefined, decisionState: string | undefined, queued: boolean): string {
  if (row !== undefined && observer && (row.status === "terminal" || row.status === "suspended")) return "settle from row";
  if (row !== undefined) {
    if (row.status === "terminal") return "settle ended";
    if (row.status === "suspended" && row.revision > ANNOUNCED) return "announce";
    return "follow";
  }
  if (decisionState === "refused") return "settle refused";
  if (decisionState === undefined && !queued) return observer ? "settle from row" : "refuse gone";
  return "follow filed";
}

const NAMES: Record<V, string> = {
  [V.None]: "none",
  [V.Follow]: "follow",
  [V.FollowFiled]: "follow filed",
  [V.AnnounceSuspended]: "announce",
  [V.SettleEnded]: "settle ended",
  [V.SettleFromRow]: "settle from row",
  [V.SettleRefused]: "settle refused",
  [V.RefuseUnapplied]: "refuse unapplied",
  [V.RefuseGone]: "refuse gone",
};

it("every kind, state, row and revision of a filed decision is judged as remote-resume.ts judged it", () => {
  for (const kind of ["approval", "cancel", "retry"] as const) {
    for (const state of ["filed", "claimed", "applied", "refused"] as const) {
      for (const status of STATUSES) {
        for (const revision of REVISIONS) {
          const row = rowOf(status, revision);
          const verdict = core.filedDecisionVerdict(filedDecisionFactsOf(kind, state, row, ANNOUNCED)) as V;
          expect(NAMES[verdict], `${kind} ${state} ${status ?? "no row"} revision ${revision}`).toBe(decisionStepBefore(kind, state, row));
        }
      }
    }
  }
});

it("every follower, row, revision, inbox state and queue of a filed start is judged as remote-start.ts judged it", () => {
  for (const observer of [false, true]) {
    for (const status of STATUSES) {
      for (const revision of REVISIONS) {
        for (const decisionState of [undefined, "filed", "claimed", "applied", "refused"]) {
          for (const queued of [false, true]) {
            const row = rowOf(status, revision);
            const verdict = core.filedStartFollowVerdict(filedStartFollowFactsOf(observer, { execution: row, decisionState, queued }, ANNOUNCED)) as V;
            const named = `observer ${observer} ${status ?? "no row"} revision ${revision} inbox ${decisionState ?? "none"} queued ${queued}`;
            expect(NAMES[verdict], named).toBe(startStepBefore(observer, row, decisionState, queued));
          }
        }
      }
    }
  }
});
