// A preparation that replaces part of its conversation's memory (a start's
// `replaceFrom`, docs/decisions/0070): every journal record from the named
// earlier execution's first one onward is deleted in the preparation's own
// transaction, before the new input is appended, so the new run's prompt
// is the memory before that execution, then the new input.
//
// Whether it may is the core's (`replaceVerdict`, docs/decisions/0087): the
// transaction cannot ask the core, so the operation carries the core's
// verdict for every fact it may read (`replaceVerdicts`, indexed by the
// `ReplaceFact` bits). Both stores read the same facts in the transaction,
// look the verdict up here, and write nothing unless it is `Replace`; this
// file words each refusal:
//
// * unknown (no row, no memory record): EXECUTION_NOT_FOUND;
// * another conversation's: INVALID_INPUT;
// * not ended (queued, running, suspended): INVALID_INPUT — an answer still
//   running is replaced by starting with `onBusy: "interrupt"`, which ends
//   it first;
// * ended, but none of its records in memory any more (retention trimmed
//   them, or its input guardrail blocked it): INVALID_INPUT.
//
// A replaced execution that failed is not retried (`env.retry`): its
// input is gone from memory, and its answer would land after the turns
// that replaced it. Retention never trims the records of an execution
// still in the store, so a failed execution with no record in memory was
// replaced; both stores' `reopenExecution` refuse it (`replacedRetry`).

import { ReplaceFact, ReplaceVerdict } from "../../assembly/abi.js";
import { InvalidInputError, PhronomyError, RetryRefusedError } from "../errors.js";
import type { ExecutionStatusName, StoredError } from "./records.js";

/** What the preparation's transaction read about the execution to replace from. */
export interface ReplacedFacts {
  /** Whether the conversation's memory holds a record of it. */
  readonly inMemory: boolean;
  /** Its row, when the store still has it. */
  readonly row: { readonly agentId: string; readonly status: ExecutionStatusName } | undefined;
}

/** The facts as the core reads them (`ReplaceFact` bits). */
export function replaceFactsOf(agentId: string, facts: ReplacedFacts): number {
  let bits = facts.inMemory ? ReplaceFact.InMemory : 0;
  if (facts.row !== undefined) {
    bits |= ReplaceFact.RowFound;
    if (facts.row.agentId === agentId) bits |= ReplaceFact.SameConversation;
    if (facts.row.status === "terminal") bits |= ReplaceFact.Ended;
  }
  return bits;
}

/** The core's verdict on the facts, from the table the operation carries. */
export function replaceVerdictOf(verdicts: readonly number[], bits: number): ReplaceVerdict {
  return (verdicts[bits] ?? ReplaceVerdict.None) as ReplaceVerdict;
}

/** Why a preparation may not replace from `replaceFrom` (the core's
 * verdict on what it read, `verdicts` being the core's table), or
 * undefined when it may. */
export function replaceRefusal(
  agentId: string,
  executionId: string,
  replaceFrom: string,
  facts: ReplacedFacts,
  verdicts: readonly number[],
): StoredError | undefined {
  const verdict = replaceVerdictOf(verdicts, replaceFactsOf(agentId, facts));
  if (verdict === ReplaceVerdict.Replace) return undefined;
  const context = { agentId, executionId };
  const what = `execution ${executionId} cannot replace conversation "${agentId}"'s memory from execution ${replaceFrom}`;
  const refusal = (reason: string, sentence: string): StoredError =>
    new InvalidInputError(`${what}: ${sentence}`, { ...context, details: { reason, replaceFrom } }).toRecord();
  switch (verdict) {
    case ReplaceVerdict.RefuseOtherConversation:
      return refusal("replace_other_conversation", `it belongs to conversation "${facts.row?.agentId}"; name an execution of this conversation`);
    case ReplaceVerdict.RefuseUnfinished:
      return refusal(
        "replace_unfinished",
        `it has not ended (${facts.row?.status}); cancel it first, or start with onBusy: "interrupt", which ends the running one before this start`,
      );
    case ReplaceVerdict.RefuseUnknown:
      return new PhronomyError("EXECUTION_NOT_FOUND", `${what}: the store knows no such execution (or retention deleted it with its memory)`, {
        ...context,
        details: { reason: "replace_unknown", replaceFrom },
      }).toRecord();
    case ReplaceVerdict.RefuseNotInMemory:
      return refusal(
        "replace_not_in_memory",
        "none of its records is in the conversation's memory any more (retention trimmed them, or its input was blocked)",
      );
    default:
      return refusal("replace_undecided", "the core gave no verdict for what the store read; nothing was written, start it again");
  }
}

/** The refusal of a retry of an execution whose turn was replaced (its
 * input is no longer in its conversation's memory). */
export function replacedRetry(executionId: string, agentId: string): RetryRefusedError {
  return new RetryRefusedError(
    `execution ${executionId} was not retried: a later start replaced its turn in conversation "${agentId}"'s memory (replaceFrom), so its input is gone; start the message again instead`,
    { executionId, agentId, reason: "replaced" },
  );
}
