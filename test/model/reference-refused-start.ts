// The reference model of a start whose preparation the store refused
// (`refusedStartVerdict`, docs/decisions/0112, 0119), written the simple way
// (named facts, an ordered list of rules, the first that holds answers), as
// the oracle the compiled core must match on every fact (test/core) and on
// random arguments across the u32 range (test/fuzz/query-differential).

import { RefusedStartFact, RefusedStartVerdict, StartAnswer as Answer } from "../../assembly/abi.js";

/** What the host knows of a start whose preparation was refused. */
interface RefusedRead {
  readonly answer: Answer;
  readonly movedElsewhere: boolean;
  readonly direct: boolean;
  readonly placedAgain: boolean;
  readonly moveRefused: boolean;
}

const RULES: readonly { readonly when: (f: RefusedRead) => boolean; readonly verdict: RefusedStartVerdict }[] = [
  { when: (f) => f.answer === Answer.Started || f.answer === Answer.Queued, verdict: RefusedStartVerdict.None },
  { when: (f) => f.placedAgain && !f.moveRefused, verdict: RefusedStartVerdict.Deliver },
  { when: (f) => !f.direct, verdict: RefusedStartVerdict.Deliver },
  { when: (f) => !f.movedElsewhere, verdict: RefusedStartVerdict.Deliver },
  { when: (f) => f.answer === Answer.Stopping, verdict: RefusedStartVerdict.Deliver },
  { when: () => true, verdict: RefusedStartVerdict.PlaceAgain },
];

export function refusedStartVerdictFor(answer: number, facts: number): RefusedStartVerdict {
  if (answer <= Answer.None || answer >= Answer.End || facts < 0 || facts >= RefusedStartFact.End) return RefusedStartVerdict.None;
  const read: RefusedRead = {
    answer: answer as Answer,
    movedElsewhere: (facts & RefusedStartFact.MovedElsewhere) !== 0,
    direct: (facts & RefusedStartFact.Direct) !== 0,
    placedAgain: (facts & RefusedStartFact.PlacedAgain) !== 0,
    moveRefused: (facts & RefusedStartFact.MoveRefused) !== 0,
  };
  return RULES.find((rule) => rule.when(read))!.verdict;
}
