// What becomes of a message taken from the durable queue whose Run failed
// before it ran (docs/decisions/0062, "A failed queued Run"): it stays
// queued in the store, or it is written terminal with the Run's error. The
// Run may settle after its conversation was let go here, so no
// conversation slot is involved: the verdict is a pure function of the
// start's answer, which the host translates from the error code
// (`startAnswerOf`, docs/decisions/0096) and carries out. Exported so the
// table test walks every answer.

import { QueuedRunVerdict, StartAnswer } from "../abi";

/** Keep it queued unless it was refused for good: a failure whose outcome
 * is not known (the store failed, the core failed, a recovery must
 * rehydrate), a busy refusal whatever its reason (refused for now), or the
 * process stopping leaves the message for whoever runs the conversation
 * next; a refusal because the id is taken already leaves the message
 * under it, which is another start's (docs/decisions/0063, found 21). A
 * full bound, an internal error and any other refusal write it terminal.
 * `None` for an answer that is not a failure, or unknown. */
export function queuedRunVerdictOf(answer: u32): u32 {
  switch (answer) {
    case StartAnswer.BusyByPolicy:
    case StartAnswer.LeaseNotHeld:
    case StartAnswer.BusyHeld:
    case StartAnswer.StoreFailed:
    case StartAnswer.CoreFailed:
    case StartAnswer.RehydrationRequired:
    case StartAnswer.Stopping:
    case StartAnswer.ExecutionExists:
      return QueuedRunVerdict.KeepQueued;
    case StartAnswer.Full:
    case StartAnswer.Internal:
    case StartAnswer.Refused:
      return QueuedRunVerdict.WriteTerminal;
    default:
      return QueuedRunVerdict.None;
  }
}
