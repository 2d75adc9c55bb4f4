// How applying a claimed inbox decision answered, as the core is told it
// (docs/decisions/0102): the one translation of its refusal into a
// `ClaimAnswer` class for `claimedDecisionVerdict`. A translation only:
// whether the decision is settled, left or recorded refused is the core's.

import { ClaimAnswer } from "../../assembly/abi.js";
import type { PhronomyError } from "../errors.js";

/** The class of a claimed decision's answer: applied (no refusal), the
 * process stopping (`RUNTIME_SHUTDOWN`), the core failed (`CORE_FAILED`),
 * or any other refusal. The host makes those two codes only through
 * `RuntimeShutdownError` and `CoreFailureError`, which the rule tested
 * before (docs/decisions/0096 says the same of the filed start's). */
export function claimAnswerOf(refusal: PhronomyError | undefined): ClaimAnswer {
  if (refusal === undefined) return ClaimAnswer.Applied;
  if (refusal.code === "RUNTIME_SHUTDOWN") return ClaimAnswer.Stopping;
  if (refusal.code === "CORE_FAILED") return ClaimAnswer.CoreFailed;
  return ClaimAnswer.Refused;
}
