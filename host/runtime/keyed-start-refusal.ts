// A keyed start's refusal (`idempotencyKey`, docs/decisions/0031, 0057): the
// outer Run follows the key's execution or fails with the refusal of its
// inner Run. The core decides (`keyedStartVerdict`, docs/decisions/0102)
// from the refusal's class (`startAnswerOf`) and, for a busy refusal,
// whether this process admitted the key's execution id — read only when the
// core asks it. The host reads the facts and carries the verdict out.

import { KeyedStartFact, KeyedStartVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import type { PhronomyError } from "../errors.js";
import { startAnswerOf } from "./start-answer.js";

/** Tells `carryOut` whether the outer Run of a keyed start whose inner Run
 * was refused with `refusal` follows the key's execution (true) or fails
 * with the refusal — at once when the core needs no read (as the host's
 * former rules did: no turn of the event loop in between), else once
 * `admittedAs` answered whether this process admitted the key's execution
 * id (a read that fails reads "no"). */
export function judgeKeyedRefusal(
  core: Pick<ControlCore, "keyedStartVerdict">,
  refusal: PhronomyError,
  admittedAs: () => Promise<boolean>,
  carryOut: (follows: boolean) => void,
): void {
  const answer = startAnswerOf(refusal);
  // `None` cannot come of a refusal's class (never `Started`, `Queued`) and
  // the facts read here: the refusal is given, as for `Fail`.
  const follows = (facts: number): boolean => (core.keyedStartVerdict(answer, facts) as KeyedStartVerdict) === KeyedStartVerdict.Follow;
  if ((core.keyedStartVerdict(answer, 0) as KeyedStartVerdict) !== KeyedStartVerdict.AskAdmitted) return carryOut(follows(0));
  admittedAs().then(
    (admitted) => carryOut(follows(KeyedStartFact.AdmittedRead | (admitted ? KeyedStartFact.AdmittedHere : 0))),
    () => carryOut(follows(KeyedStartFact.AdmittedRead)),
  );
}
