// The filer's side of the inbox (docs/decisions/0011, 0026, 0031, 0086;
// moved here by 0110): a process that filed a decision (an approval, a
// cancel, a retry) or a start for the process that holds its conversation
// follows it from the durable rows it polls. What is decided here is what
// each read becomes: keep following, tell a new suspension, or settle — how
// it ended, the owner's refusal, or a refusal of the filer's own. A pure
// function of facts the host read. Exported so the table test walks every
// fact.
//
// Rules kept here, a decision (`filedDecisionVerdict`):
// * Refused by its owner: settled with the recorded refusal.
// * Not applied and its execution ended — an approval never claimed (it can
//   no longer be applied), or a cancel (it has nothing left to do) — is
//   answered from the row now: the owner may never claim it (a conversation
//   gone idle claims only what wakes it). The cancel settles with how it
//   ended, the approval with the resume's refusal. A claimed approval may
//   have landed unmarked, and a retry reopens an ended execution: both wait
//   for their owner.
// * Applied: a terminal row (or none) is how the execution ended after it;
//   a row suspended again past the last revision told is announced.
// A start (`filedStartFollowVerdict`):
// * Its row found: an observer settles from a terminal or suspended row;
//   the start's Run settles once terminal, and is told each new suspension.
// * No row: refused by its owner, settled with the refusal; neither filed
//   nor queued (purged), an observer settles from the absence, the Run is
//   refused; else still filed or queued, followed.

import { FiledDecisionFact, FiledFollowVerdict, FiledStartFollowFact } from "../abi";

/** What a filer does with a decision it filed, given `facts`
 * (`FiledDecisionFact` bits). `None` for facts out of range, `Cancel` with
 * `Retry`, more than one of `Claimed`, `Applied`, `Refused`, a row's state
 * without `RowFound`, `RowTerminal` with `RowSuspended`, or
 * `SuspendedLater` without `RowSuspended`. */
export function filedDecisionVerdictOf(facts: u32): u32 {
  if (facts >= <u32>FiledDecisionFact.End) return FiledFollowVerdict.None;
  const cancel = (facts & FiledDecisionFact.Cancel) != 0;
  const retry = (facts & FiledDecisionFact.Retry) != 0;
  const claimed = (facts & FiledDecisionFact.Claimed) != 0;
  const applied = (facts & FiledDecisionFact.Applied) != 0;
  const refused = (facts & FiledDecisionFact.Refused) != 0;
  const row = (facts & FiledDecisionFact.RowFound) != 0;
  const terminal = (facts & FiledDecisionFact.RowTerminal) != 0;
  const suspended = (facts & FiledDecisionFact.RowSuspended) != 0;
  const later = (facts & FiledDecisionFact.SuspendedLater) != 0;
  if (cancel && retry) return FiledFollowVerdict.None;
  if (<i32>claimed + <i32>applied + <i32>refused > 1) return FiledFollowVerdict.None;
  if (!rowFactsHold(row, terminal, suspended, later)) return FiledFollowVerdict.None;
  if (refused) return FiledFollowVerdict.SettleRefused;
  const unapplied = cancel ? !applied : !retry && !claimed && !applied;
  if (unapplied && terminal) return cancel ? FiledFollowVerdict.SettleEnded : FiledFollowVerdict.RefuseUnapplied;
  if (!applied) return FiledFollowVerdict.Follow;
  if (!row || terminal) return FiledFollowVerdict.SettleEnded;
  return later ? FiledFollowVerdict.AnnounceSuspended : FiledFollowVerdict.Follow;
}

/** What a filer does with a start it follows, given `facts`
 * (`FiledStartFollowFact` bits). `None` for facts out of range, a row's
 * state without `RowFound`, `RowTerminal` with `RowSuspended`,
 * `SuspendedLater` without `RowSuspended`, or `Refused` without `Filed`. */
export function filedStartFollowVerdictOf(facts: u32): u32 {
  if (facts >= <u32>FiledStartFollowFact.End) return FiledFollowVerdict.None;
  const observer = (facts & FiledStartFollowFact.Observer) != 0;
  const row = (facts & FiledStartFollowFact.RowFound) != 0;
  const terminal = (facts & FiledStartFollowFact.RowTerminal) != 0;
  const suspended = (facts & FiledStartFollowFact.RowSuspended) != 0;
  const later = (facts & FiledStartFollowFact.SuspendedLater) != 0;
  const filed = (facts & FiledStartFollowFact.Filed) != 0;
  const refused = (facts & FiledStartFollowFact.Refused) != 0;
  const queued = (facts & FiledStartFollowFact.Queued) != 0;
  if (!rowFactsHold(row, terminal, suspended, later)) return FiledFollowVerdict.None;
  if (refused && !filed) return FiledFollowVerdict.None;
  if (row) {
    if (observer && (terminal || suspended)) return FiledFollowVerdict.SettleFromRow;
    if (terminal) return FiledFollowVerdict.SettleEnded;
    return later ? FiledFollowVerdict.AnnounceSuspended : FiledFollowVerdict.Follow;
  }
  if (refused) return FiledFollowVerdict.SettleRefused;
  if (!filed && !queued) return observer ? FiledFollowVerdict.SettleFromRow : FiledFollowVerdict.RefuseGone;
  return FiledFollowVerdict.FollowFiled;
}

/** A row's state only with a row, one state at most, "later" only of a
 * suspended row. */
function rowFactsHold(row: bool, terminal: bool, suspended: bool, later: bool): bool {
  if ((terminal || suspended) && !row) return false;
  if (terminal && suspended) return false;
  return !later || suspended;
}
