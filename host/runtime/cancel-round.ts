// A cancel by id's round (`env.cancel(executionId)`, docs/decisions/0026):
// once the cancel's wait settled, whether it is thrown, answered from the
// execution's row, or made again (it suspended before the cancel reached
// its session). The core decides (`cancelRoundVerdict`, docs/decisions/0110)
// from the class of the error the wait settled with (`cancelAnswerOf`), the
// row — read only when the core asks — and the round; the host reads the
// facts and carries the verdict out.

import { CancelAnswer, CancelRoundFact, CancelRoundVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { ApprovalRequiredError, CancellationError, ExecutionEndedError, ExecutionNotFoundError, PhronomyError } from "../errors.js";
import type { ExecutionRow } from "../store/records.js";

/** The class of the error a cancel's wait settled with (undefined: settled
 * without one). By class, as cancel-by-id.ts read it before 0110: an error
 * rebuilt from another process (a plain PhronomyError with one of these
 * codes) is `Refused`. */
export function cancelAnswerOf(settled: PhronomyError | undefined): CancelAnswer {
  if (settled === undefined) return CancelAnswer.Settled;
  if (settled instanceof ExecutionEndedError) return CancelAnswer.Ended;
  if (settled instanceof ExecutionNotFoundError) return CancelAnswer.NotFound;
  if (settled instanceof ApprovalRequiredError) return CancelAnswer.ApprovalRequired;
  if (settled instanceof CancellationError) return CancelAnswer.Cancelled;
  return CancelAnswer.Refused;
}

/** What comes of a round: answered from its terminal row, cancelled again,
 * or thrown. */
export type CancelRoundStep =
  | { readonly kind: "answer"; readonly row: ExecutionRow }
  | { readonly kind: "again" }
  | { readonly kind: "throw"; readonly error: PhronomyError };

/** Judges round `round` (from 0) of the cancel of `executionId` whose wait
 * settled with `settled`; `readRow` is called only when the core asks. */
export async function judgeCancelRound(
  core: Pick<ControlCore, "cancelRoundVerdict">,
  executionId: string,
  settled: PhronomyError | undefined,
  round: number,
  readRow: () => Promise<ExecutionRow | undefined>,
): Promise<CancelRoundStep> {
  const answer = cancelAnswerOf(settled);
  let verdict = core.cancelRoundVerdict(answer, 0, round) as CancelRoundVerdict;
  let row: ExecutionRow | undefined;
  if (verdict === CancelRoundVerdict.ReadRow) {
    row = await readRow();
    const terminal = row?.status === "terminal" ? CancelRoundFact.RowTerminal : 0;
    verdict = core.cancelRoundVerdict(answer, CancelRoundFact.RowRead | terminal, round) as CancelRoundVerdict;
  }
  if (verdict === CancelRoundVerdict.Answer && row !== undefined) return { kind: "answer", row };
  if (verdict === CancelRoundVerdict.CancelAgain) return { kind: "again" };
  // `Throw`; `None` cannot come of these facts and a round the loop keeps
  // under `Limit.CancelRoundsMax`: thrown too.
  return {
    kind: "throw",
    error:
      settled
      ?? new PhronomyError("INTERNAL", `the cancel of execution ${executionId} settled but the execution has not ended (status ${row?.status ?? "missing"})`, {
        executionId,
      }),
  };
}
