// The facts of a signal the core needs to decide what it may do to the
// pending wait (docs/decisions/0077): the wait is a keyed event wait, the
// answer is a signal, and the signal was stored before the wait was
// committed. The core refuses a signal for another kind of wait, and any
// other answer for an event wait (`WaitKindMustMatch`).

import { ResumeFact } from "../../assembly/abi.js";
import type { ApprovalRequest } from "./events.js";
import type { Decision } from "./wait-decisions.js";

export function eventFactsOf(pending: ApprovalRequest | undefined, decision: Decision): number {
  let facts = 0;
  if (pending?.kind === "event") facts |= ResumeFact.PendingWaitsForEvent;
  if (decision.given?.kind === "signal") facts |= ResumeFact.GivesSignal;
  if (decision.storedSignal === true) facts |= ResumeFact.SignalStored;
  return facts;
}
