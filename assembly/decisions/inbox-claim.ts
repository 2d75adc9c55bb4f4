// A claim in the approval inbox (docs/decisions/0011, 0031, 0086; moved
// here by 0102): what the owner does with a decision (approval, cancel,
// retry) or a start filed elsewhere for a conversation it holds, and what
// each becomes once applied — settled applied, settled refused (recorded
// for its filer), left claimed for the next owner, or judged again soon.
// Pure functions of facts the host read: a claim's conversation need not be
// live here, so no slot is involved. Exported so the table test walks every
// fact.
//
// Rules kept here, for a decision (`claimedDecisionVerdictOf`):
// * An approval claimed again (a former owner claimed it and died): the
//   host reads the approval's decided step first; a step that names this
//   very decision was the former owner's commit — settled applied, not
//   applied twice (0086). A cancel is idempotent and a retry reads its
//   row's revision itself: applied again.
// * The inbox closing: left (a shutdown refusal, as before).
// * Applied: settled applied.
// * Refused while stopping or by a core failure (decision 0023), or no
//   longer held at the claim's epoch: left, the next owner's to judge.
// * Any other refusal: settled refused.
// For a filed start (`claimedStartVerdictOf`), after its fate
// (`filedStartVerdict`):
// * The inbox closing, or the partition no longer held at the claim's
//   epoch: left (before starting it).
// * Ran: settled applied; left: left; refused: settled refused.
// * Its write failed (the store failed it, or refused it for the lease):
//   judged again soon while the partition may still be held at the claim's
//   epoch and the inbox is open, else left for the next owner's claim.

import { ClaimAnswer, ClaimFact, ClaimVerdict, FiledStartVerdict } from "../abi";

/** What becomes of a claimed decision that answered `answer` (a
 * `ClaimAnswer`; `None` before it was applied), given `facts` (`ClaimFact`
 * bits). `None` for arguments out of range, `DecidedThis` without
 * `DecidedRead`, a read not asked for, or an answer after a read that
 * settled it. */
export function claimedDecisionVerdictOf(answer: u32, facts: u32): u32 {
  if (answer >= <u32>ClaimAnswer.End || facts >= <u32>ClaimFact.End) return ClaimVerdict.None;
  const read = has(facts, ClaimFact.DecidedRead);
  const decidedThis = has(facts, ClaimFact.DecidedThis);
  const looksUp = has(facts, ClaimFact.Approval) && has(facts, ClaimFact.ClaimedAgain);
  if ((decidedThis && !read) || (read && !looksUp)) return ClaimVerdict.None;
  if (answer == ClaimAnswer.None) {
    if (looksUp && !read) return ClaimVerdict.AskDecided;
    if (decidedThis) return ClaimVerdict.SettleApplied;
    return has(facts, ClaimFact.Closed) ? ClaimVerdict.Leave : ClaimVerdict.Apply;
  }
  if (decidedThis) return ClaimVerdict.None;
  if (answer == ClaimAnswer.Applied) return ClaimVerdict.SettleApplied;
  if (answer == ClaimAnswer.Stopping || answer == ClaimAnswer.CoreFailed || !has(facts, ClaimFact.Held)) return ClaimVerdict.Leave;
  return ClaimVerdict.SettleRefused;
}

/** What becomes of a claimed filed start whose fate is `fate` (a
 * `FiledStartVerdict`; `None` before it was started), given `facts`
 * (`ClaimFact` bits; only `Closed` and `Held` mean anything for a start,
 * `ClaimedAgain` is ignored). `None` for arguments out of range, a fate
 * that is a question (`AskAdmitted`), or the bits of an approval. */
export function claimedStartVerdictOf(fate: u32, facts: u32): u32 {
  if (fate > <u32>FiledStartVerdict.Refused || fate == FiledStartVerdict.AskAdmitted || facts >= <u32>ClaimFact.End) return ClaimVerdict.None;
  if (has(facts, ClaimFact.Approval) || has(facts, ClaimFact.DecidedRead) || has(facts, ClaimFact.DecidedThis)) return ClaimVerdict.None;
  const keeps = !has(facts, ClaimFact.Closed) && has(facts, ClaimFact.Held);
  if (fate == FiledStartVerdict.None) return keeps ? ClaimVerdict.Apply : ClaimVerdict.Leave;
  if (fate == FiledStartVerdict.Ran) return ClaimVerdict.SettleApplied;
  if (fate == FiledStartVerdict.Refused) return ClaimVerdict.SettleRefused;
  if (fate == FiledStartVerdict.WriteFailed) return keeps ? ClaimVerdict.TryAgain : ClaimVerdict.Leave;
  return ClaimVerdict.Leave;
}

function has(facts: u32, fact: u32): bool {
  return (facts & fact) != 0;
}
