// What becomes of a message taken from the durable queue whose Run failed
// before it ran (docs/decisions/0062, "A failed queued Run"): it stays
// queued in the store, or it is written terminal with the Run's error. The
// Run may settle after its conversation was let go here, so no
// conversation slot is involved: the verdict is a pure function of the
// failure's class, which the host translates from the error code
// (`queuedRunFailureOf`) and carries out. Exported so the table test walks
// every class.

import { QueuedRunFailure, QueuedRunVerdict } from "../abi";

/** Keep it queued unless it was refused for good: a failure whose outcome
 * is not known (the store failed, the core failed, a recovery must
 * rehydrate), a refusal for now, or the process stopping leaves the
 * message for whoever runs the conversation next; a refusal because the
 * id is taken already leaves the message under it, which is another
 * start's (docs/decisions/0063, found 21). `None` for an unknown
 * class. */
export function queuedRunVerdictOf(failure: u32): u32 {
  switch (failure) {
    case QueuedRunFailure.NotNow:
    case QueuedRunFailure.StoreFailed:
    case QueuedRunFailure.OutcomeUnknown:
    case QueuedRunFailure.Stopping:
    case QueuedRunFailure.ExecutionExists:
      return QueuedRunVerdict.KeepQueued;
    case QueuedRunFailure.RefusedForGood:
      return QueuedRunVerdict.WriteTerminal;
    default:
      return QueuedRunVerdict.None;
  }
}
