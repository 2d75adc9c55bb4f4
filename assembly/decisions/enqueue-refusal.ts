// A refused enqueue (the busy policy's durable queue, docs/decisions/0025,
// 0063; moved here by 0110): a message queued under a named id (an
// idempotency key, a start filed by another process) whose write the store
// refused, and an observer (`env.wait`) of such a message told the refusal.
// A pure function of facts the host read. Exported so the table test walks
// every fact.
//
// Rules kept here:
// * Cancelled while its write was in flight: the cancel by id is told
//   whether a message is queued under its id after all — the store refused
//   it because the id is there (`ExecutionExists`: another process queued
//   the same key's message), so the cancel is written for that one.
// * Else the message is forgotten here and its Run refused; when its id is
//   in the store already (perhaps a message another process queued before
//   the conversation moved here, which this one does not know), the
//   conversation's stored queue is read and merged so that it runs here
//   (the keyed start follows it).
// * An observer of the message follows the execution under its id when the
//   refusal was that the id is an execution already (a second start of a
//   key); any other refusal is the observer's.
// Unlike `keyedStartVerdict`, `AGENT_BUSY` is not read here: an enqueue is
// never refused busy.

import { EnqueueRefusalFact, EnqueueRefusalVerdict, StartAnswer } from "../abi";

/** What comes of an enqueue refused with `answer` (its `StartAnswer`),
 * given `facts` (`EnqueueRefusalFact` bits). `None` for an answer or facts
 * out of range, an answer that is not a refusal (`Started`, `Queued`), or
 * a message both `Cancelling` and `Observed`. */
export function enqueueRefusalVerdictOf(answer: u32, facts: u32): u32 {
  if (answer == StartAnswer.None || answer >= <u32>StartAnswer.End || facts >= <u32>EnqueueRefusalFact.End) return EnqueueRefusalVerdict.None;
  if (answer == StartAnswer.Started || answer == StartAnswer.Queued) return EnqueueRefusalVerdict.None;
  const cancelling = (facts & EnqueueRefusalFact.Cancelling) != 0;
  const observed = (facts & EnqueueRefusalFact.Observed) != 0;
  const exists = answer == StartAnswer.ExecutionExists;
  if (cancelling && observed) return EnqueueRefusalVerdict.None;
  if (cancelling) return exists ? EnqueueRefusalVerdict.TellCancelQueued : EnqueueRefusalVerdict.TellCancelGone;
  if (observed) return exists ? EnqueueRefusalVerdict.Follow : EnqueueRefusalVerdict.Reject;
  return exists ? EnqueueRefusalVerdict.ForgetAndMerge : EnqueueRefusalVerdict.Forget;
}
