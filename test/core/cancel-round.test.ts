// A cancel by id's rounds decided in the core (docs/decisions/0026, 0110):
// the compiled `cancelRoundVerdict` against the reference model on every
// answer, fact and round, the cases the decision spells out, and what the
// host's `judgeCancelRound` does — for every error class the wait settles
// with, every error code and reason as a plain PhronomyError (an error
// rebuilt from another process), every row and every round — against
// cancel-by-id.ts's former rule, written out as it stood.

import { beforeAll, expect, it } from "vitest";
import { CancelAnswer as Answer, CancelRoundFact as Fact, CancelRoundVerdict as Verdict, Limit } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { ApprovalRequiredError, CancellationError, ExecutionEndedError, ExecutionNotFoundError, PhronomyError, StoreError } from "../../host/errors.js";
import { judgeCancelRound, type CancelRoundStep } from "../../host/runtime/cancel-round.js";
import type { ExecutionRow } from "../../host/store/records.js";
import { cancelRoundVerdictFor } from "../model/reference-enqueue-cancel.js";
import { errorOf, EVERY_CODE, REASONS } from "./every-error-code.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rules for every answer, fact and round", () => {
  for (let answer = 0; answer <= Answer.End + 1; answer += 1) {
    for (let facts = 0; facts <= Fact.End + 1; facts += 1) {
      for (let round = 0; round <= Limit.CancelRoundsMax + 1; round += 1) {
        expect(core.cancelRoundVerdict(answer, facts, round), `answer ${answer} facts ${facts} round ${round}`).toBe(
          cancelRoundVerdictFor(answer, facts, round),
        );
      }
    }
  }
  expect(core.cancelRoundVerdict(0xffff_ffff, 0, 0)).toBe(Verdict.None);
  expect(core.cancelRoundVerdict(Answer.Refused, 0xffff_ffff, 0)).toBe(Verdict.None);
  expect(core.cancelRoundVerdict(Answer.Refused, 0, 0xffff_ffff)).toBe(Verdict.None);
});

it("ended or not found: thrown unread; a terminal row answers; suspended first: cancelled again while rounds are left; else thrown", () => {
  for (const answer of [Answer.Ended, Answer.NotFound]) expect(core.cancelRoundVerdict(answer, 0, 0)).toBe(Verdict.Throw);
  for (const answer of [Answer.Settled, Answer.ApprovalRequired, Answer.Cancelled, Answer.Refused]) {
    expect(core.cancelRoundVerdict(answer, 0, 0)).toBe(Verdict.ReadRow);
    expect(core.cancelRoundVerdict(answer, Fact.RowRead | Fact.RowTerminal, Limit.CancelRoundsMax - 1)).toBe(Verdict.Answer);
  }
  for (const answer of [Answer.ApprovalRequired, Answer.Cancelled]) {
    for (let round = 0; round < Limit.CancelRoundsMax - 1; round += 1) expect(core.cancelRoundVerdict(answer, Fact.RowRead, round)).toBe(Verdict.CancelAgain);
    expect(core.cancelRoundVerdict(answer, Fact.RowRead, Limit.CancelRoundsMax - 1)).toBe(Verdict.Throw);
  }
  for (const answer of [Answer.Settled, Answer.Refused]) expect(core.cancelRoundVerdict(answer, Fact.RowRead, 0)).toBe(Verdict.Throw);
  // A terminal row unread, a read of an answer thrown unread, a round past the last: cannot hold.
  expect(core.cancelRoundVerdict(Answer.Refused, Fact.RowTerminal, 0)).toBe(Verdict.None);
  expect(core.cancelRoundVerdict(Answer.Ended, Fact.RowRead, 0)).toBe(Verdict.None);
  expect(core.cancelRoundVerdict(Answer.Refused, 0, Limit.CancelRoundsMax)).toBe(Verdict.None);
});

/** cancel-by-id.ts's round before 0110 (`cancelRoundsMax` 4), as it stood:
 * the step, and whether the row was read. */
async function roundBefore(
  executionId: string,
  settled: PhronomyError | undefined,
  round: number,
  readRow: () => Promise<ExecutionRow | undefined>,
): Promise<{ step: string; read: boolean }> {
  if (settled instanceof ExecutionEndedError || settled instanceof ExecutionNotFoundError) return { step: `throw ${settled.message}`, read: false };
  const row = await readRow();
  if (row?.status === "terminal") return { step: `answer ${row.executionId}`, read: true };
  if ((settled instanceof ApprovalRequiredError || settled instanceof CancellationError) && round + 1 < 4) return { step: "again", read: true };
  const error =
    settled
    ?? new PhronomyError("INTERNAL", `the cancel of execution ${executionId} settled but the execution has not ended (status ${row?.status ?? "missing"})`, {
      executionId,
    });
  return { step: `throw ${error.message}`, read: true };
}

function nameOf(step: CancelRoundStep): string {
  if (step.kind === "answer") return `answer ${step.row.executionId}`;
  if (step.kind === "again") return "again";
  return `throw ${step.error.message}`;
}

function rowOf(status: ExecutionRow["status"] | undefined): ExecutionRow | undefined {
  return status === undefined ? undefined : ({ executionId: "e1", agentId: "a1", status } as ExecutionRow);
}

it("every settled error, every row and every round are carried out as cancel-by-id.ts decided; the row is read only when the core asks", async () => {
  const context = { executionId: "e1", agentId: "a1" };
  const settledErrors: (PhronomyError | undefined)[] = [
    undefined,
    new ExecutionEndedError("e1", "a1", "completed", null, "the cancel"),
    new ExecutionNotFoundError("e1", "the cancel", "memory"),
    new ApprovalRequiredError(undefined, context),
    new CancellationError(context, "why"),
    new StoreError("lost", context),
    ...EVERY_CODE.flatMap((code) => REASONS.map((reason) => errorOf(code, reason))),
  ];
  const statuses = [undefined, "terminal", "suspended", "running", "queued"] as (ExecutionRow["status"] | undefined)[];
  let walked = 0;
  for (const settled of settledErrors) {
    for (const status of statuses) {
      for (let round = 0; round < Limit.CancelRoundsMax; round += 1) {
        const named = `${settled?.constructor.name ?? "settled"} ${settled?.code ?? ""} ${settled?.details?.["reason"] ?? ""} row ${status ?? "missing"} round ${round}`;
        let read = false;
        const readRow = (): Promise<ExecutionRow | undefined> => {
          read = true;
          return Promise.resolve(rowOf(status));
        };
        const now = await judgeCancelRound(core, "e1", settled, round, readRow);
        const readNow = read;
        read = false;
        const before = await roundBefore("e1", settled, round, readRow);
        expect({ step: nameOf(now), read: readNow }, named).toEqual(before);
        walked += 1;
      }
    }
  }
  expect(walked).toBe(settledErrors.length * statuses.length * Limit.CancelRoundsMax);
});
