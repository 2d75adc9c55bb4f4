// A signal stored before its event wait was committed (docs/decisions/0077;
// moved here by 0102): once the wait suspends, the signal stored for its key
// is taken and offered to it through the conversation's resume, where the
// core's `Resume` decides the answer. What is decided here is the signal's
// side: whether to offer it, and whether it is dropped from the store or
// kept for the wait's recovery. A pure function of facts the host read.
// Exported so the table test walks every fact.
//
// Rules kept here:
// * No definition of the conversation here: kept (offered again when the
//   wait is recovered where it is defined).
// * Given to the wait: dropped.
// * Refused because the wait's schema refuses its payload
//   (`INVALID_INPUT`): it can never resume the wait — dropped.
// * Any other refusal (answered already, ended, held, the store failed):
//   kept, offered again when the wait is recovered.

import { StoredSignalFact, StoredSignalVerdict } from "../abi";

/** What becomes of a stored signal, given `facts` (`StoredSignalFact`
 * bits). `None` for facts out of range, `Refused` without `Answered`,
 * `PayloadRefused` without `Refused`, or an answer without a definition. */
export function storedSignalVerdictOf(facts: u32): u32 {
  if (facts >= <u32>StoredSignalFact.End) return StoredSignalVerdict.None;
  const here = (facts & StoredSignalFact.DefinedHere) != 0;
  const answered = (facts & StoredSignalFact.Answered) != 0;
  const refused = (facts & StoredSignalFact.Refused) != 0;
  const payloadRefused = (facts & StoredSignalFact.PayloadRefused) != 0;
  if ((refused && !answered) || (payloadRefused && !refused) || (answered && !here)) return StoredSignalVerdict.None;
  if (!answered) return here ? StoredSignalVerdict.Resume : StoredSignalVerdict.Keep;
  return !refused || payloadRefused ? StoredSignalVerdict.Drop : StoredSignalVerdict.Keep;
}
