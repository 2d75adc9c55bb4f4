// A start filed for this process (docs/decisions/0031, 0062; moved here by
// 0096): its fate in the inbox once its Run answered. It follows the core's
// last `Admit` verdict on it (`LeftFiled`), then the start's answer (the
// host's `StartAnswer`), then — for a busy refusal — whether this process
// admitted its execution id itself. A pure function of facts the host read:
// the claim may be settled after its conversation was let go here, so no
// slot is involved. Exported so the table test walks every fact.
//
// Rules kept here, in order:
// * Its id in the store already (a former owner admitted it): it ran; its
//   recovery finishes it.
// * The process stopping, or its core failed (decision 0023): left for the
//   next owner.
// * The core's verdict was `LeaveFiled` (owned elsewhere): left for the
//   owner, whatever the error says.
// * The store failed the write, or its lease check refused it (the core
//   said run here; the lease settles in the store): the write is tried
//   again.
// * Busy with this very id (its key started here meanwhile, maybe still
//   being prepared): it runs (docs/decisions/0057); the host reads that
//   first.
// * Anything else is refused, and the refusal recorded.

import { FiledStartFact, FiledStartVerdict, StartAnswer } from "../abi";

/** The fate of a filed start whose Run answered `answer`, given `facts`
 * (`FiledStartFact` bits). `None` for an answer or facts out of range,
 * `AdmittedHere` without `AdmittedRead`, or a read not asked for. */
export function filedStartVerdictOf(answer: u32, facts: u32): u32 {
  if (answer == StartAnswer.None || answer >= <u32>StartAnswer.End || facts >= <u32>FiledStartFact.End) return FiledStartVerdict.None;
  const read = has(facts, FiledStartFact.AdmittedRead);
  if (has(facts, FiledStartFact.AdmittedHere) && !read) return FiledStartVerdict.None;
  const verdict = fateOf(answer, has(facts, FiledStartFact.LeftFiled));
  if (verdict != FiledStartVerdict.AskAdmitted) return read ? FiledStartVerdict.None : verdict;
  if (!read) return FiledStartVerdict.AskAdmitted;
  return has(facts, FiledStartFact.AdmittedHere) ? FiledStartVerdict.Ran : FiledStartVerdict.Refused;
}

// -- inside -----------------------------------------------------------------

function fateOf(answer: u32, leftFiled: bool): u32 {
  if (answer == StartAnswer.Started || answer == StartAnswer.Queued || answer == StartAnswer.ExecutionExists) return FiledStartVerdict.Ran;
  if (answer == StartAnswer.Stopping || answer == StartAnswer.CoreFailed || leftFiled) return FiledStartVerdict.Left;
  if (answer == StartAnswer.StoreFailed || answer == StartAnswer.LeaseNotHeld) return FiledStartVerdict.WriteFailed;
  if (answer == StartAnswer.BusyByPolicy || answer == StartAnswer.BusyHeld) return FiledStartVerdict.AskAdmitted;
  return FiledStartVerdict.Refused;
}

function has(facts: u32, fact: u32): bool {
  return (facts & fact) != 0;
}
