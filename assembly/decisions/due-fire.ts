// The due sweep's fire of one wait (docs/decisions/0076; moved here by
// 0102): a timer or an event wait's timeout whose due time passed is fired
// through the conversation's own resume with the clock's answer, where the
// core decides the answer itself (`Resume`). What is decided here is the
// sweep's side: whether to fire, and what a refused fire becomes. A pure
// function of facts the host read. Exported so the table test walks every
// fact.
//
// Rules kept here:
// * The environment closed, or the conversation's definition not made here
//   (its recovery, once defined, reports the suspension and the sweep comes
//   back): skipped.
// * A fire the store failed (`STORE`: it may not have landed) while the
//   environment is open: thrown, and the sweep fires it again.
// * Any other refusal — answered already (fired twice, by hand, in another
//   process), ended (cancelled), the environment closing — is dropped.

import { DueFireFact, DueFireVerdict } from "../abi";

/** What the sweep does with a due wait, given `facts` (`DueFireFact` bits).
 * `None` for facts out of range, `StoreFailed` without `Refused`, or a
 * refusal of a fire made without a definition here. */
export function dueFireVerdictOf(facts: u32): u32 {
  if (facts >= <u32>DueFireFact.End) return DueFireVerdict.None;
  const closed = (facts & DueFireFact.Closed) != 0;
  const here = (facts & DueFireFact.DefinedHere) != 0;
  const refused = (facts & DueFireFact.Refused) != 0;
  const storeFailed = (facts & DueFireFact.StoreFailed) != 0;
  if (!refused) {
    if (storeFailed) return DueFireVerdict.None;
    return closed || !here ? DueFireVerdict.Skip : DueFireVerdict.Fire;
  }
  if (!here) return DueFireVerdict.None;
  return storeFailed && !closed ? DueFireVerdict.TryAgain : DueFireVerdict.Drop;
}
