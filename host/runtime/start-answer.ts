// How a start answered, as the core is told it (docs/decisions/0096): the
// one translation of a start's refusal into a `StartAnswer` class, read by
// every verdict over a start's answer — a message taken from the durable
// queue (`queuedRunVerdict`), a schedule's firing (`scheduleFiringVerdict`),
// a parent's child (`childStartVerdict`), a start filed for this process
// (`filedStartVerdict`), a keyed start's inner Run (`keyedStartVerdict`,
// docs/decisions/0102), a refused enqueue (`enqueueRefusalVerdict`, 0110). A
// translation only: whether the start is made again, kept, settled or told
// as a failure is the core's.

import { StartAnswer } from "../../assembly/abi.js";
import { PhronomyError } from "../errors.js";
import { isExecutionExists, isLeaseLost } from "./error-codes.js";

/** The class of a start's refusal: its error code, with the reason of an
 * `AGENT_BUSY` (the busy policy, a lease held elsewhere, a conversation held
 * for recovery), of an `INVALID_INPUT` whose id is taken and of an
 * `EXECUTION_REHYDRATION_REQUIRED` fenced at a lapsed epoch (`lease_lost`:
 * the lease in flux). A throw that is not a PhronomyError is `Internal`. */
export function startAnswerOf(error: unknown): StartAnswer {
  if (!(error instanceof PhronomyError)) return StartAnswer.Internal;
  if (isExecutionExists(error)) return StartAnswer.ExecutionExists;
  switch (error.code) {
    case "RUNTIME_SHUTDOWN":
      return StartAnswer.Stopping;
    case "STORE":
      return StartAnswer.StoreFailed;
    case "OFFLOAD_FULL":
    case "CAPACITY":
      return StartAnswer.Full;
    case "CORE_FAILED":
      return StartAnswer.CoreFailed;
    case "INTERNAL":
      return StartAnswer.Internal;
    case "EXECUTION_REHYDRATION_REQUIRED":
      // A start's write fenced at the epoch it was sent with (`lease_lost`):
      // nothing was written, the lease is in flux (docs/decisions/0134).
      return isLeaseLost(error) ? StartAnswer.LeaseNotHeld : StartAnswer.RehydrationRequired;
    case "AGENT_BUSY":
      return busyAnswerOf(error.details?.["reason"]);
    default:
      return StartAnswer.Refused;
  }
}

function busyAnswerOf(reason: unknown): StartAnswer {
  if (reason === undefined) return StartAnswer.BusyByPolicy;
  return reason === "lease_not_held" ? StartAnswer.LeaseNotHeld : StartAnswer.BusyHeld;
}
