// A parent's child start (docs/decisions/0079, 0086; moved here by 0096):
// once a parent's `child` wait is committed, the host makes the child's
// keyed start and asks what comes next, first with the start's answer alone,
// then with what it read of the child's row. A pure function of facts the
// host read: the child's conversation may live in another process, so no
// slot is involved. Exported so the table test walks every fact.
//
// Rules kept here:
// * A start that has an execution id (run here, filed, or queued) is
//   followed: a child that has ended already (its end filed for a wait
//   whose answer was lost) is told to the parent again; one still running
//   files its own end.
// * A refusal that says nothing of whether the child starts — another
//   process holds the child's conversation (`LeaseNotHeld`), or the store
//   failed the start (`StoreFailed`: it may have landed) — is made again
//   later, never told as the child's failure.
// * Any other refusal is the child's failure, unless its row exists after
//   all: an ended row's outcome is told, a running one files its own end.
// * Reading the row or telling the parent failed: a refused start is made
//   again later (keyed: it follows a child that did start); a followed one
//   is left (its end files itself).
// * The process stopping does nothing: the next one reinstalls the wait.

import { ChildFact, ChildStartVerdict, StartAnswer } from "../abi";

/** The next step of a child start that answered `answer`, given `facts`
 * (`ChildFact` bits; 0 before anything was read). `None` for an answer
 * or facts out of range, or that cannot hold together. */
export function childStartVerdictOf(answer: u32, facts: u32): u32 {
  if (answer == StartAnswer.None || answer >= <u32>StartAnswer.End || facts >= <u32>ChildFact.End) return ChildStartVerdict.None;
  const retried = answer == StartAnswer.StoreFailed || answer == StartAnswer.LeaseNotHeld;
  if (facts == 0) {
    if (answer == StartAnswer.Stopping) return ChildStartVerdict.Drop;
    return retried ? ChildStartVerdict.StartAgainLater : ChildStartVerdict.ReadChild;
  }
  // Never read after a verdict that reads nothing; an ended row is a row.
  if (!has(facts, ChildFact.Read) || retried || answer == StartAnswer.Stopping) return ChildStartVerdict.None;
  if (has(facts, ChildFact.Ended) && !has(facts, ChildFact.Found)) return ChildStartVerdict.None;
  const followed = answer == StartAnswer.Started || answer == StartAnswer.Queued;
  if (has(facts, ChildFact.Failed)) return followed ? ChildStartVerdict.Leave : ChildStartVerdict.StartAgainLater;
  if (has(facts, ChildFact.Ended)) return ChildStartVerdict.TellOutcome;
  if (has(facts, ChildFact.Found) || followed) return ChildStartVerdict.Leave;
  return ChildStartVerdict.TellRefusal;
}

function has(facts: u32, fact: u32): bool {
  return (facts & fact) != 0;
}
