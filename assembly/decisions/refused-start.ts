// A start whose preparation the store refused (docs/decisions/0112): told
// to its Run, or placed again. A pure function of facts the host read.
// Exported so the table test walks every answer and fact.
//
// Rules kept here:
// * A start made here whose preparation was refused because its
//   conversation was moved to another partition (0101: the natural
//   holder, which did not know the home, was fenced out; or the home it
//   noted was pruned since, 0112), where it lives now known: placed again,
//   once, whatever class the refusal is worded in (`AGENT_BUSY` naming the
//   holder; the fence's own refusal when the partition is held here) —
//   `Admit` asked as for a start made now, which files it for the home's
//   holder (or runs it here, when this process holds the home). Nothing
//   was written: the preparation is refused as a whole. Not while this
//   process is closing (`Stopping`).
// * A start whose preparation carried its conversation's move (`TakeHere`,
//   docs/decisions/0119) and was refused because the move was: the move's
//   answer, placed again as above — also when placed again once already
//   (0112's placement may answer `TakeHere`; the host asks a move once per
//   start, so this happens once).
// * Placed again once already, a filed start (its fate is the inbox's,
//   `filedStartVerdict`), any other refusal: told to its Run.

import { RefusedStartFact, RefusedStartVerdict, StartAnswer } from "../abi";

/** What comes of a start refused with `answer` (its `StartAnswer`), given
 * `facts` (`RefusedStartFact` bits). `None` for an answer or facts out of
 * range, or an answer that is not a refusal (`Started`, `Queued`). */
export function refusedStartVerdictOf(answer: u32, facts: u32): u32 {
  if (answer == StartAnswer.None || answer >= <u32>StartAnswer.End || facts >= <u32>RefusedStartFact.End) return RefusedStartVerdict.None;
  if (answer == StartAnswer.Started || answer == StartAnswer.Queued) return RefusedStartVerdict.None;
  const moved = (facts & RefusedStartFact.MovedElsewhere) != 0;
  const direct = (facts & RefusedStartFact.Direct) != 0;
  const again = (facts & RefusedStartFact.PlacedAgain) != 0 && (facts & RefusedStartFact.MoveRefused) == 0;
  return moved && direct && !again && answer != StartAnswer.Stopping ? RefusedStartVerdict.PlaceAgain : RefusedStartVerdict.Deliver;
}
