// Scheduled starts (docs/decisions/0078, moved here by 0087): which slot a
// due schedule fires, and what becomes of a firing once it is claimed and
// once its keyed start answered. Pure functions of facts the host read: the
// schedule's row is the store's, its times and cron arithmetic are the
// host's (it computes the slots a verdict names), and no conversation slot
// is involved — a firing's start is an ordinary start, which the core places
// and admits as any other. Exported so the table tests walk every fact.
//
// Rules kept here:
// * Missed slots fire once: a schedule due while no process ran fires its
//   oldest missed slot, and its next slot is the first one after now.
// * A pending firing is claimed again for the same slot (the same keyed
//   start, run once) when its retry time passed, or at once by a single
//   owner's first pass (its claimer is gone).
// * A claim the store did not apply (cancelled, fired elsewhere, revised)
//   starts nothing.
// * A schedule's slots only grow, so no slot (and no keyed start) is
//   claimed after it was settled (docs/decisions/0098): a run now fires at
//   now only while now is after its last slot and before its next one; at
//   the instant of its last slot it is refused (fired at this instant), and
//   once its next slot is due it fires that slot, now.
// * A firing claimed again whose keyed start is refused naming its own
//   keyed execution, which the store has, was started by an earlier
//   claimer: it settles as started (or queued), not refused (0097).
// * A start refused for a reason that passes (closing, store failing, a
//   bound full, the outcome not known, a lease in flux) leaves the firing
//   pending; any other refusal settles it, and the schedule moves on.

import {
  ScheduleClaimVerdict, ScheduleFact, ScheduleFiringFact, ScheduleFiringVerdict, StartAnswer,
} from "../abi";

/** The claim of a row read by the sweep or by "run now". `None` for facts
 * out of range or that cannot hold together (run now on a first pass). */
export function scheduleClaimVerdictOf(facts: u32): u32 {
  if (facts >= <u32>ScheduleFact.End) return ScheduleClaimVerdict.None;
  const pending = has(facts, ScheduleFact.FiringPending);
  const recurring = has(facts, ScheduleFact.Recurring);
  const due = has(facts, ScheduleFact.Due);
  if (has(facts, ScheduleFact.RunNow)) {
    if (has(facts, ScheduleFact.OwnerGone)) return ScheduleClaimVerdict.None;
    if (pending) return ScheduleClaimVerdict.RefusePending;
    if (has(facts, ScheduleFact.FiredThisInstant)) return ScheduleClaimVerdict.RefuseFiredThisInstant;
    if (due) return recurring ? ScheduleClaimVerdict.FireDueThenAfterNow : ScheduleClaimVerdict.FireDueOnce;
    return recurring ? ScheduleClaimVerdict.FireNowKeepNext : ScheduleClaimVerdict.FireNowOnce;
  }
  if (pending) return due || has(facts, ScheduleFact.OwnerGone) ? ScheduleClaimVerdict.ClaimAgain : ScheduleClaimVerdict.Skip;
  if (!due) return ScheduleClaimVerdict.Skip;
  return recurring ? ScheduleClaimVerdict.FireDueThenAfterNow : ScheduleClaimVerdict.FireDueOnce;
}

/** The next step of a firing: skip an unapplied claim, make the keyed
 * start, or settle it by the start's answer. `None` for facts or an
 * answer out of range, an answer without a start made here, or a keyed
 * execution found without a refusal to read it after. */
export function scheduleFiringVerdictOf(facts: u32, answer: u32): u32 {
  if (facts >= <u32>ScheduleFiringFact.End || answer >= <u32>StartAnswer.End) return ScheduleFiringVerdict.None;
  const claimed = has(facts, ScheduleFiringFact.Claimed);
  const here = has(facts, ScheduleFiringFact.DefinedHere);
  const found = has(facts, ScheduleFiringFact.KeyedExecutionFound);
  if (has(facts, ScheduleFiringFact.KeyedExecutionQueued) && !found) return ScheduleFiringVerdict.None;
  if (found && !isRefusal(answer)) return ScheduleFiringVerdict.None;
  if (answer != StartAnswer.None && (!claimed || !here)) return ScheduleFiringVerdict.None;
  if (!claimed) return ScheduleFiringVerdict.Skip;
  if (!here) return ScheduleFiringVerdict.LeavePending;
  // The keyed execution an earlier claimer started: this firing started.
  if (found) return has(facts, ScheduleFiringFact.KeyedExecutionQueued) ? ScheduleFiringVerdict.SettleQueued : ScheduleFiringVerdict.SettleStarted;
  return answerVerdict(answer);
}

// -- inside -----------------------------------------------------------------

function answerVerdict(answer: u32): u32 {
  switch (answer) {
    case StartAnswer.None: return ScheduleFiringVerdict.Start;
    case StartAnswer.Started: return ScheduleFiringVerdict.SettleStarted;
    case StartAnswer.Queued: return ScheduleFiringVerdict.SettleQueued;
    // Stopping, StoreFailed, Full, CoreFailed, Internal, a lease in flux
    // (LeaseNotHeld, BusyHeld): a later claim of the same firing may not
    // meet it.
    case StartAnswer.Stopping:
    case StartAnswer.StoreFailed:
    case StartAnswer.Full:
    case StartAnswer.CoreFailed:
    case StartAnswer.Internal:
    case StartAnswer.LeaseNotHeld:
    case StartAnswer.BusyHeld:
      return ScheduleFiringVerdict.LeavePending;
    // The busy policy, a rehydration, an id taken, any other refusal.
    default: return ScheduleFiringVerdict.SettleRefused;
  }
}

/** A start's answer that is a refusal (no execution id). */
function isRefusal(answer: u32): bool {
  return answer != StartAnswer.None && answer != StartAnswer.Started && answer != StartAnswer.Queued;
}

function has(facts: u32, fact: u32): bool {
  return (facts & fact) != 0;
}
