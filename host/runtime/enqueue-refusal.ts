// A refused enqueue (the busy policy's durable queue, docs/decisions/0025,
// 0063): what the cancel waiting on the write, the queue and the message's
// Run are told, and whether an observer of the message (`env.wait`) follows
// the execution under its id. The core decides (`enqueueRefusalVerdict`,
// docs/decisions/0110) from the refusal's class (`startAnswerOf`) and
// whether the message was cancelling or is observed; the host reads the
// facts and carries the verdict out.

import { EnqueueRefusalFact, EnqueueRefusalVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import type { PhronomyError } from "../errors.js";
import { startAnswerOf } from "./start-answer.js";

/** The steps a refused enqueue may take, carried out in this order. */
export interface EnqueueRefusalSteps {
  /** The cancel waiting on the write is told whether a message is queued
   * under its id (true: the store refused the write because it is). */
  tellCancel(queued: boolean): void;
  /** The message is forgotten here (counted out of its conversation). */
  forget(): void;
  /** The conversation's stored queue is read and merged. */
  merge(): void;
  /** The message's Run is refused with the refusal. */
  refuse(): void;
}

/** Carries out the core's verdict on an enqueue the store refused with
 * `refusal`, the message being cancelled (`cancelling`) or not. */
export function carryOutEnqueueRefusal(
  core: Pick<ControlCore, "enqueueRefusalVerdict">,
  refusal: PhronomyError,
  cancelling: boolean,
  steps: EnqueueRefusalSteps,
): void {
  const facts = cancelling ? EnqueueRefusalFact.Cancelling : 0;
  const verdict = core.enqueueRefusalVerdict(startAnswerOf(refusal), facts) as EnqueueRefusalVerdict;
  if (verdict === EnqueueRefusalVerdict.TellCancelQueued || verdict === EnqueueRefusalVerdict.TellCancelGone) {
    return steps.tellCancel(verdict === EnqueueRefusalVerdict.TellCancelQueued);
  }
  // `Forget`, `ForgetAndMerge`; `None` cannot come of a refusal's class
  // and these facts: the message is forgotten and its Run refused, as for
  // `Forget`.
  steps.forget();
  if (verdict === EnqueueRefusalVerdict.ForgetAndMerge) steps.merge();
  steps.refuse();
}

/** Whether an observer of a queued message whose Run was refused with
 * `error` follows the execution under the message's id (else it is told
 * `error`). */
export function observerFollows(core: Pick<ControlCore, "enqueueRefusalVerdict">, error: unknown): boolean {
  const verdict = core.enqueueRefusalVerdict(startAnswerOf(error), EnqueueRefusalFact.Observed) as EnqueueRefusalVerdict;
  return verdict === EnqueueRefusalVerdict.Follow;
}
