// Whether a start may replace its conversation's memory from an earlier
// execution (a start's `replaceFrom`, docs/decisions/0070, moved here by
// 0087). The cut is made in the preparation's own transaction, which the
// core cannot join: so the host asks this verdict for every fact the
// transaction may read (`ReplaceFact.End` of them) and hands the table to
// the store with the operation; the store reads the facts, looks its
// verdict up, and writes nothing unless it is `Replace`. Exported so the
// table test walks every fact.
//
// Rules kept here, in this order:
// * another conversation's execution is never replaced from;
// * nor one that has not ended (a running answer is replaced by starting
//   with `onBusy: "interrupt"`, which ends it first);
// * an ended one whose records are all gone from memory (retention, a
//   blocked input) has nothing to cut from;
// * no row and no record: unknown (or pruned with its memory).

import { ReplaceFact, ReplaceVerdict } from "../abi";

export function replaceVerdictOf(facts: u32): u32 {
  if (facts >= <u32>ReplaceFact.End) return ReplaceVerdict.None;
  const row = (facts & ReplaceFact.RowFound) != 0;
  const rowFacts = <u32>ReplaceFact.SameConversation | <u32>ReplaceFact.Ended;
  if (!row && (facts & rowFacts) != 0) return ReplaceVerdict.None;
  if (row && (facts & ReplaceFact.SameConversation) == 0) return ReplaceVerdict.RefuseOtherConversation;
  if (row && (facts & ReplaceFact.Ended) == 0) return ReplaceVerdict.RefuseUnfinished;
  if ((facts & ReplaceFact.InMemory) != 0) return ReplaceVerdict.Replace;
  return row ? ReplaceVerdict.RefuseNotInMemory : ReplaceVerdict.RefuseUnknown;
}
