// A claim in the approval inbox decided in the core (docs/decisions/0011,
// 0031, 0086, 0102): the compiled `claimedDecisionVerdict` and
// `claimedStartVerdict` against the reference model on every answer and
// fact, the cases the decisions spell out, and the host's carrying out
// (`InboxApplier`, over a store that hands it one claim) against
// approval-inbox.ts's former `judge` and `judgeStart`, written out as they
// stood, for every kind of claim, claimed once or again, every decided
// step, the inbox open or closing, held or not, and every error code.

import { beforeAll, expect, it } from "vitest";
import { ClaimAnswer as Answer, ClaimFact as Fact, ClaimVerdict as Verdict, FiledStartVerdict as Fate } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { CoreFailureError, PhronomyError, RuntimeShutdownError } from "../../host/errors.js";
import { InboxApplier, type InboxStore } from "../../host/runtime/approval-inbox.js";
import type { FiledStartFate } from "../../host/runtime/filed-start-fate.js";
import { transferError } from "../../host/store/error-transfer.js";
import type { ClaimedDecision, DecisionSettlement } from "../../host/store/inbox-records.js";
import { claimedDecisionVerdictFor, claimedStartVerdictFor } from "../model/reference-queries.js";
import { errorOf, EVERY_CODE } from "./every-error-code.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdicts are the model's rules for every answer, fate and fact", () => {
  for (let facts = 0; facts <= Fact.End + 1; facts += 1) {
    for (let answer = 0; answer <= Answer.End + 1; answer += 1) {
      expect(core.claimedDecisionVerdict(answer, facts), `answer ${answer} facts ${facts}`).toBe(claimedDecisionVerdictFor(answer, facts));
    }
    for (let fate = 0; fate <= Fate.Refused + 2; fate += 1) {
      expect(core.claimedStartVerdict(fate, facts), `fate ${fate} facts ${facts}`).toBe(claimedStartVerdictFor(fate, facts));
    }
  }
  expect(core.claimedDecisionVerdict(0xffff_ffff, 0)).toBe(Verdict.None);
  expect(core.claimedStartVerdict(0, 0xffff_ffff)).toBe(Verdict.None);
});

it("a decision: an approval claimed again is looked up first; named by the decided step, settled without applying it again (0086)", () => {
  const again = Fact.Approval | Fact.ClaimedAgain | Fact.Held;
  expect(core.claimedDecisionVerdict(Answer.None, again)).toBe(Verdict.AskDecided);
  expect(core.claimedDecisionVerdict(Answer.None, again | Fact.DecidedRead | Fact.DecidedThis)).toBe(Verdict.SettleApplied);
  expect(core.claimedDecisionVerdict(Answer.None, again | Fact.DecidedRead)).toBe(Verdict.Apply);
  // A cancel or a retry claimed again is applied again; closing: left.
  expect(core.claimedDecisionVerdict(Answer.None, Fact.ClaimedAgain | Fact.Held)).toBe(Verdict.Apply);
  expect(core.claimedDecisionVerdict(Answer.None, Fact.Approval | Fact.Closed | Fact.Held)).toBe(Verdict.Leave);
  // A read not asked for, a step named without its read: cannot hold.
  expect(core.claimedDecisionVerdict(Answer.None, Fact.Approval | Fact.DecidedRead)).toBe(Verdict.None);
  expect(core.claimedDecisionVerdict(Answer.None, again | Fact.DecidedThis)).toBe(Verdict.None);
});

it("a decision applied: settled; refused while stopping, by a core failure, or not held at the claim's epoch: left; else recorded", () => {
  expect(core.claimedDecisionVerdict(Answer.Applied, Fact.Held)).toBe(Verdict.SettleApplied);
  expect(core.claimedDecisionVerdict(Answer.Applied, 0)).toBe(Verdict.SettleApplied);
  expect(core.claimedDecisionVerdict(Answer.Stopping, Fact.Held)).toBe(Verdict.Leave);
  expect(core.claimedDecisionVerdict(Answer.CoreFailed, Fact.Held)).toBe(Verdict.Leave);
  expect(core.claimedDecisionVerdict(Answer.Refused, 0)).toBe(Verdict.Leave);
  expect(core.claimedDecisionVerdict(Answer.Refused, Fact.Held)).toBe(Verdict.SettleRefused);
});

it("a filed start: started only while open and held; its fate settled, left, or its write judged again while still held", () => {
  expect(core.claimedStartVerdict(Fate.None, Fact.Held)).toBe(Verdict.Apply);
  expect(core.claimedStartVerdict(Fate.None, 0)).toBe(Verdict.Leave);
  expect(core.claimedStartVerdict(Fate.None, Fact.Held | Fact.Closed)).toBe(Verdict.Leave);
  expect(core.claimedStartVerdict(Fate.Ran, 0)).toBe(Verdict.SettleApplied);
  expect(core.claimedStartVerdict(Fate.Left, Fact.Held)).toBe(Verdict.Leave);
  expect(core.claimedStartVerdict(Fate.Refused, 0)).toBe(Verdict.SettleRefused);
  expect(core.claimedStartVerdict(Fate.WriteFailed, Fact.Held)).toBe(Verdict.TryAgain);
  expect(core.claimedStartVerdict(Fate.WriteFailed, Fact.Held | Fact.Closed)).toBe(Verdict.Leave);
  expect(core.claimedStartVerdict(Fate.WriteFailed, 0)).toBe(Verdict.Leave);
  expect(core.claimedStartVerdict(Fate.AskAdmitted, Fact.Held)).toBe(Verdict.None);
  expect(core.claimedStartVerdict(Fate.None, Fact.Approval | Fact.Held)).toBe(Verdict.None);
  expect(core.claimedStartVerdict(Fate.None, Fact.ClaimedAgain | Fact.Held)).toBe(Verdict.Apply);
});

// -- the host's carrying out, against the former rules --------------------------

/** One claim as a test hands it to the applier. */
interface Case {
  readonly kind: "approval" | "cancel" | "retry" | "start" | undefined;
  readonly claims: number;
  /** The decided step: none, naming this decision, naming another. */
  readonly decided: "none" | "this" | "other";
  /** Closing as the claim is judged. */
  readonly closing: boolean;
  /** Held at the claim's epoch once it was applied (and, for a start, before). */
  readonly heldBefore: boolean;
  readonly heldAfter: boolean;
  /** The apply's refusal (undefined: applied), or a start's fate. */
  readonly refusal: PhronomyError | undefined;
  readonly fate: FiledStartFate["kind"];
}

type Judged = DecisionSettlement | "left" | "again";

/** approval-inbox.ts's `judge` / `judgeStart` before 0102, as they stood. */
function judgedBefore(c: Case): { judged: Judged; applied: boolean } {
  if (c.kind === "start") {
    if (c.closing || !c.heldBefore) return { judged: "left", applied: false };
    switch (c.fate) {
      case "ran":
        return { judged: { applied: true }, applied: true };
      case "left":
        return { judged: "left", applied: true };
      case "refused":
        return { judged: { applied: false, error: transferError(c.refusal!) }, applied: true };
      case "write_failed":
        return { judged: !c.closing && c.heldAfter ? "again" : "left", applied: true };
    }
  }
  if (c.claims > 1 && (c.kind ?? "approval") === "approval" && c.decided === "this") return { judged: { applied: true }, applied: false };
  const refusal = c.closing ? new RuntimeShutdownError("decision d") : c.refusal;
  const applied = !c.closing;
  if (refusal === undefined) return { judged: { applied: true }, applied };
  if (refusal instanceof RuntimeShutdownError || refusal instanceof CoreFailureError || !c.heldAfter) return { judged: "left", applied };
  return { judged: { applied: false, error: transferError(refusal) }, applied };
}

/** The applier as the host runs it now, handed the one claim. */
async function judgedNow(c: Case): Promise<{ judged: Judged; applied: boolean }> {
  const claim: ClaimedDecision = {
    decisionId: "d",
    ...(c.kind !== undefined ? { kind: c.kind } : {}),
    executionId: "e",
    agentId: "a",
    approvalId: "w",
    approved: true,
    reason: null,
    filedBy: "p",
    filedAt: 0,
    executionRevision: 1,
    claimedEpoch: 1,
    claims: c.claims,
    ...(c.kind === "start" ? { start: { input: "hi", options: {} } } : {}),
  } as ClaimedDecision;
  let applied = false;
  let held = c.heldBefore;
  let settled: DecisionSettlement | undefined;
  let claimed = 0;
  let passDone: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (passDone = resolve));
  let applier!: InboxApplier;
  let closing: Promise<void> | undefined;
  const store: InboxStore = {
    fileDecision: () => Promise.reject(new Error("not filed here")),
    claimDecisions: () => {
      claimed += 1;
      if (claimed > 1) {
        passDone();
        return Promise.resolve([]);
      }
      if (c.closing) closing = applier.close();
      return Promise.resolve([claim]);
    },
    settleDecision: (_claim, settlement) => {
      settled = settlement;
      return Promise.resolve(true);
    },
    readDecisions: () => Promise.resolve([]),
    approvalDecided: () =>
      Promise.resolve(c.decided === "none" ? undefined : { approved: true, ...(c.decided === "this" ? { filedAs: "d" } : { filedAs: "x" }) }),
  };
  const heldAt = (): boolean => held;
  applier = new InboxApplier(
    store,
    () => {
      applied = true;
      held = c.heldAfter;
      return Promise.resolve(c.refusal);
    },
    () => {
      applied = true;
      held = c.heldAfter;
      return Promise.resolve(
        c.fate === "refused"
          ? { kind: "refused", error: c.refusal! }
          : c.fate === "write_failed"
            ? { kind: "write_failed", error: c.refusal! }
            : { kind: c.fate },
      );
    },
    heldAt,
    { warn: () => undefined },
    core,
    false,
    heldAt,
    () => true,
  );
  applier.wake("a");
  // A pass ends with the empty claim after it, or with the close it began.
  await (c.closing ? new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => closing) : done);
  // "again" keeps the claim (unfinished) for the retry timer: no settlement.
  const kept = (applier as unknown as { unfinished: Map<string, unknown> }).unfinished.has("d");
  await applier.close();
  return { judged: kept ? "again" : (settled ?? "left"), applied };
}

it("the applier carries every claim out as the former judge decided it", async () => {
  const refusals: (PhronomyError | undefined)[] = [undefined, new RuntimeShutdownError("x"), new CoreFailureError("Admit", new Error("trapped"))];
  // The host makes these two codes only through their classes (below: a
  // plain error with either code is read by its code now).
  for (const code of EVERY_CODE) if (code !== "RUNTIME_SHUTDOWN" && code !== "CORE_FAILED") refusals.push(errorOf(code, undefined));
  let cases = 0;
  for (const kind of ["approval", "cancel", "retry", undefined, "start"] as const) {
    for (const claims of [1, 2]) {
      for (const decided of ["none", "this", "other"] as const) {
        for (const closing of [false, true]) {
          // Held before the apply is read for a start only.
          for (const heldBefore of kind === "start" ? [false, true] : [true]) {
            for (const heldAfter of [false, true]) {
              const fates: FiledStartFate["kind"][] = kind === "start" ? ["ran", "left", "refused", "write_failed"] : ["ran"];
              for (const fate of fates) {
                for (const refusal of kind === "start" ? [errorOf("STORE", undefined)] : refusals) {
                  const c: Case = { kind, claims, decided, closing, heldBefore, heldAfter, refusal, fate };
                  const named = JSON.stringify({ ...c, refusal: refusal?.code });
                  expect(await judgedNow(c), named).toEqual(judgedBefore(c));
                  cases += 1;
                }
              }
            }
          }
        }
      }
    }
  }
  expect(cases).toBe(2_976);
});

it("a refusal is read by its code: RUNTIME_SHUTDOWN and CORE_FAILED leave the claim whatever the error's class (0096's reading)", async () => {
  for (const code of ["RUNTIME_SHUTDOWN", "CORE_FAILED"] as const) {
    const c: Case = {
      kind: "approval",
      claims: 1,
      decided: "none",
      closing: false,
      heldBefore: true,
      heldAfter: true,
      refusal: errorOf(code, undefined),
      fate: "ran",
    };
    // Before 0102 a plain PhronomyError with either code (none is made by
    // the host; a store worker's rebuilt error could be one) was recorded.
    expect(judgedBefore(c).judged).toMatchObject({ applied: false });
    expect(await judgedNow(c)).toEqual({ judged: "left", applied: true });
  }
});
