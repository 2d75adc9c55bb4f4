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
  if (has(facts, ScheduleFact.RunNow)) {
    if (has(facts, ScheduleFact.OwnerGone)) return ScheduleClaimVerdict.None;
    if (pending) return ScheduleClaimVerdict.RefusePending;
    return recurring ? ScheduleClaimVerdict.FireNowKeepNext : ScheduleClaimVerdict.FireNowOnce;
  }
  const due = has(facts, ScheduleFact.Due);
  if (pending) return due || has(facts, ScheduleFact.OwnerGone) ? ScheduleClaimVerdict.ClaimAgain : ScheduleClaimVerdict.Skip;
  if (!due) return ScheduleClaimVerdict.Skip;
  return recurring ? ScheduleClaimVerdict.FireDueThenAfterNow : ScheduleClaimVerdict.FireDueOnce;
}

/** The next step of a firing: skip an unapplied claim, make the keyed
 * start, or settle it by the start's answer. `None` for facts or an
 * answer out of range, or an answer without a start made here. */
export function scheduleFiringVerdictOf(facts: u32, answer: u32): u32 {
  if (facts >= <u32>ScheduleFiringFact.End || answer >= <u32>StartAnswer.End) return ScheduleFiringVerdict.None;
  const claimed = has(facts, ScheduleFiringFact.Claimed);
  const here = has(facts, ScheduleFiringFact.DefinedHere);
  if (answer != StartAnswer.None && (!claimed || !here)) return ScheduleFiringVerdict.None;
  if (!claimed) return ScheduleFiringVerdict.Skip;
  if (!here) return ScheduleFiringVerdict.LeavePending;
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

function has(facts: u32, fact: u32): bool {
  return (facts & fact) != 0;
}
