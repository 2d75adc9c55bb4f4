// A keyed start's refusal (`idempotencyKey`; docs/decisions/0031, 0057;
// moved here by 0102): a start with a key runs as an inner Run under the
// key's execution id, its outer Run (the application's) follows it. When
// the inner Run is refused, the outer one either follows the key's
// execution — the refusal was by that execution itself — or fails with the
// refusal. A pure function of facts the host read: the key's execution may
// run in another process, so no slot is involved. Exported so the table
// test walks every fact.
//
// Rules kept here:
// * Its id in the store already (`ExecutionExists`: the key was started
//   before, here or elsewhere): follow that execution.
// * Busy (`AGENT_BUSY` whatever its reason: the busy policy, a lease held
//   elsewhere, a conversation held for recovery): the key's first start may
//   still run, or be being prepared, here — the host reads whether this
//   process admitted that id (a read that fails reads "no"); follow it if
//   so, else fail.
// * Any other refusal fails the outer Run with it.

import { KeyedStartFact, KeyedStartVerdict, StartAnswer } from "../abi";

/** What the outer Run of a keyed start whose inner Run answered `answer`
 * does, given `facts` (`KeyedStartFact` bits; 0 before a read). `None` for
 * an answer or facts out of range, an answer that is not a refusal
 * (`Started`, `Queued`), `AdmittedHere` without `AdmittedRead`, or a read
 * not asked for. */
export function keyedStartVerdictOf(answer: u32, facts: u32): u32 {
  if (answer == StartAnswer.None || answer >= <u32>StartAnswer.End || facts >= <u32>KeyedStartFact.End) return KeyedStartVerdict.None;
  if (answer == StartAnswer.Started || answer == StartAnswer.Queued) return KeyedStartVerdict.None;
  const read = (facts & KeyedStartFact.AdmittedRead) != 0;
  const here = (facts & KeyedStartFact.AdmittedHere) != 0;
  if (here && !read) return KeyedStartVerdict.None;
  const busy = answer == StartAnswer.BusyByPolicy || answer == StartAnswer.LeaseNotHeld || answer == StartAnswer.BusyHeld;
  if (!busy) {
    if (read) return KeyedStartVerdict.None;
    return answer == StartAnswer.ExecutionExists ? KeyedStartVerdict.Follow : KeyedStartVerdict.Fail;
  }
  if (!read) return KeyedStartVerdict.AskAdmitted;
  return here ? KeyedStartVerdict.Follow : KeyedStartVerdict.Fail;
}
