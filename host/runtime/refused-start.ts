// A start whose preparation the store refused (docs/decisions/0112). The
// natural partition's holder of a conversation another process moved
// (`takeIdleHere`, docs/decisions/0101) does not know the home until its
// preparation is fenced out; the store then reads the home, notes it, and
// refuses the start naming it (`movedTo`). The host gathers that fact and
// the start's own (made here, placed again already); the core decides
// (`refusedStartVerdict`): placed again — `Admit` asked as for a start made
// now, which files it for the home's holder — or its Run told the refusal.

import { RefusedStartFact, RefusedStartVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import type { PhronomyError } from "../errors.js";
import type { StartRequest } from "./requests.js";
import { startAnswerOf } from "./start-answer.js";

/** The facts of a refused start, as `refusedStartVerdict` reads them. */
export function refusedStartFactsOf(request: StartRequest, error: PhronomyError): number {
  const moved = typeof error.details?.["movedTo"] === "number";
  return (
    (moved ? RefusedStartFact.MovedElsewhere : 0)
    | (request.placement?.direct === true ? RefusedStartFact.Direct : 0)
    | (request.placedAgain === true ? RefusedStartFact.PlacedAgain : 0)
    | (error.details?.["moveRefused"] === true ? RefusedStartFact.MoveRefused : 0)
  );
}

/** On the loop, inside the apply of its `DeliverStartFailure` (the core
 * released its admission): true when the core placed the start again —
 * nothing was written, so it keeps its Run and its id; `released` tells
 * the core its admission was let go, then its admission is posted again —
 * false when its Run is to be told the refusal. */
export function placeRefusedStart(core: Pick<ControlCore, "refusedStartVerdict">, request: StartRequest, error: PhronomyError, released: () => void): boolean {
  const placement = request.placement;
  if (placement === undefined) return false;
  const verdict = core.refusedStartVerdict(startAnswerOf(error), refusedStartFactsOf(request, error)) as RefusedStartVerdict;
  if (verdict !== RefusedStartVerdict.PlaceAgain) return false;
  request.placedAgain = true;
  // What the refused preparation left goes; the input guardrail's verdict
  // (`inputVerdict`) stays: the input was checked (docs/decisions/0116).
  request.prepared = undefined;
  request.storeError = undefined;
  request.firstBarrier = undefined;
  released();
  placement.post();
  return true;
}
