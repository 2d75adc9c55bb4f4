// A cancel by id's rounds (`env.cancel(executionId)`, docs/decisions/0026;
// moved here by 0110): the cancel is sent where the execution runs and its
// wait settles when it ended — or earlier, when it suspended before the
// cancel reached its session. What is decided here is what comes of that
// settling. A pure function of facts the host read. Exported so the table
// test walks every fact.
//
// Rules kept here:
// * Settled as ended before the cancel, or not found: thrown as it is.
// * Else the row is read: a terminal row answers (`cancelled`, or how it
//   ended first: a cancel never turns a committed outcome into another).
// * Not ended, settled as suspended first (`APPROVAL_REQUIRED`) or
//   `CANCELLED`: cancelled again — the suspension now — while rounds are
//   left (`Limit.CancelRoundsMax` in all).
// * Else thrown: the error it settled with, or (settled without one) that
//   the cancel settled but the execution has not ended.

import { CancelAnswer, CancelRoundFact, CancelRoundVerdict, Limit } from "../abi";

/** The next step of a cancel by id in round `round` (from 0) whose wait
 * settled as `answer` (a `CancelAnswer`), given `facts` (`CancelRoundFact`
 * bits; 0 before the read). `None` for arguments out of range,
 * `RowTerminal` without `RowRead`, or a read after an answer that is
 * thrown unread. */
export function cancelRoundVerdictOf(answer: u32, facts: u32, round: u32): u32 {
  if (answer == CancelAnswer.None || answer >= <u32>CancelAnswer.End || facts >= <u32>CancelRoundFact.End) return CancelRoundVerdict.None;
  if (round >= <u32>Limit.CancelRoundsMax) return CancelRoundVerdict.None;
  const read = (facts & CancelRoundFact.RowRead) != 0;
  const terminal = (facts & CancelRoundFact.RowTerminal) != 0;
  if (terminal && !read) return CancelRoundVerdict.None;
  if (answer == CancelAnswer.Ended || answer == CancelAnswer.NotFound) return read ? CancelRoundVerdict.None : CancelRoundVerdict.Throw;
  if (!read) return CancelRoundVerdict.ReadRow;
  if (terminal) return CancelRoundVerdict.Answer;
  const suspendedFirst = answer == CancelAnswer.ApprovalRequired || answer == CancelAnswer.Cancelled;
  return suspendedFirst && round + 1 < <u32>Limit.CancelRoundsMax ? CancelRoundVerdict.CancelAgain : CancelRoundVerdict.Throw;
}
