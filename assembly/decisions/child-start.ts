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
//   process holds the child's conversation (`LeaseNotHeld`), the store
//   failed the start (`StoreFailed`: it may have landed), or the child's
//   conversation is held here for a recovery after a store failure
//   (`BusyHeld`: once recovered, a keyed start runs the child; decision
//   0099, seed 728979172) — is made again later, never told as the child's
//   failure.
// * Any other refusal is the child's failure, unless its row exists after
//   all: an ended row's outcome is told, a running one files its own end.
// * Reading the row or telling the parent failed: a refused start is made
//   again later (keyed: it follows a child that did start); a followed one
//   is left (its end files itself).
// * A start made again later, when it comes due (decision 0099): made now
//   only while the parent's row is suspended on that very wait; its read
//   failed, later again; else dropped (answered, cancelled, gone).
// * The process stopping does nothing: the next one reinstalls the wait.

import { ChildFact, ChildStartVerdict, StartAnswer } from "../abi";

/** The facts of a child's row (the second question). */
const CHILD_ROW: u32 = ChildFact.Read | ChildFact.Found | ChildFact.Ended;
/** The facts of the parent's row (a start made again coming due). */
const PARENT_ROW: u32 = ChildFact.ParentSuspended | ChildFact.ParentOnWait;

/** The next step of a child start that answered `answer`, given `facts`
 * (`ChildFact` bits; 0 before anything was read). `None` for an answer
 * or facts out of range, or that cannot hold together. */
export function childStartVerdictOf(answer: u32, facts: u32): u32 {
  if (answer == StartAnswer.None || answer >= <u32>StartAnswer.End || facts >= <u32>ChildFact.End) return ChildStartVerdict.None;
  const retried = answer == StartAnswer.StoreFailed || answer == StartAnswer.LeaseNotHeld || answer == StartAnswer.BusyHeld;
  const followed = answer == StartAnswer.Started || answer == StartAnswer.Queued;
  if (facts == 0) {
    if (answer == StartAnswer.Stopping) return ChildStartVerdict.Drop;
    return retried ? ChildStartVerdict.StartAgainLater : ChildStartVerdict.ReadChild;
  }
  if (has(facts, ChildFact.ParentRead)) return dueAgainVerdictOf(answer, facts, followed);
  if ((facts & PARENT_ROW) != 0) return ChildStartVerdict.None;
  // Never read after a verdict that reads nothing; an ended row is a row.
  if (!has(facts, ChildFact.Read) || retried || answer == StartAnswer.Stopping) return ChildStartVerdict.None;
  if (has(facts, ChildFact.Ended) && !has(facts, ChildFact.Found)) return ChildStartVerdict.None;
  if (has(facts, ChildFact.Failed)) return followed ? ChildStartVerdict.Leave : ChildStartVerdict.StartAgainLater;
  if (has(facts, ChildFact.Ended)) return ChildStartVerdict.TellOutcome;
  if (has(facts, ChildFact.Found) || followed) return ChildStartVerdict.Leave;
  return ChildStartVerdict.TellRefusal;
}

/** A start made again later came due: the parent's row says whether it
 * is made now. Only a refused start is ever made again (a followed one is
 * left, a stopping one dropped), and the child's row is not asked of here. */
function dueAgainVerdictOf(answer: u32, facts: u32, followed: bool): u32 {
  if (followed || answer == StartAnswer.Stopping || (facts & CHILD_ROW) != 0) return ChildStartVerdict.None;
  if (has(facts, ChildFact.Failed)) return (facts & PARENT_ROW) != 0 ? ChildStartVerdict.None : ChildStartVerdict.StartAgainLater;
  return (facts & PARENT_ROW) == PARENT_ROW ? ChildStartVerdict.StartAgain : ChildStartVerdict.Drop;
}

function has(facts: u32, fact: u32): bool {
  return (facts & fact) != 0;
}
