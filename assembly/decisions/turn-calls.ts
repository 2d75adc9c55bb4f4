// One question per turn (docs/decisions/0075, 0080; moved here by 0087): a
// model turn may call several tools that ask something of a person or of
// the world (a typed input, an approval, a timer, an event, a child), but
// one suspension answers one request. The session asks this verdict for
// each call of the turn, in the model's order, with what the turn showed so
// far, and builds its request from the answers. A pure function: exported
// so the table test walks every fact.
//
// Rules kept here:
// * A turn with a waiting call waits on its first one (that did not fail);
//   every other call that waits or needs approval is declined when the
//   answer comes, and the rest run with it.
// * A turn with no waiting call asks one approval for every call that
//   needs one; the rest run.

import { TurnCallFact, TurnCallVerdict } from "../abi";

export function turnCallVerdictOf(facts: u32): u32 {
  if (facts >= <u32>TurnCallFact.End) return TurnCallVerdict.None;
  const waits = has(facts, TurnCallFact.Waits);
  const failed = has(facts, TurnCallFact.Failed);
  const turnWaits = has(facts, TurnCallFact.TurnWaits);
  const taken = has(facts, TurnCallFact.WaitTaken);
  if (!turnWaits && (taken || (waits && !failed))) return TurnCallVerdict.None;
  if (turnWaits) {
    if (waits && !failed && !taken) return TurnCallVerdict.AskWait;
    return waits || has(facts, TurnCallFact.NeedsApproval) ? TurnCallVerdict.Decline : TurnCallVerdict.Run;
  }
  return has(facts, TurnCallFact.NeedsApproval) ? TurnCallVerdict.AskApproval : TurnCallVerdict.Run;
}

function has(facts: u32, fact: u32): bool {
  return (facts & fact) != 0;
}
