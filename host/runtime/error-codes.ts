// The typed error for each refusal code the core returns (SPEC §7). The
// core speaks in result codes; users see errors with a stable `code`, the
// ids involved and a sentence on what to do.

import { ResultCode } from "../../assembly/abi.js";
import { resultCodeName } from "../core/names.js";
import {
  AgentBusyError,
  AgentClosedError,
  ApprovalMismatchError,
  CancellationError,
  ExecutionRehydrationRequiredError,
  InvalidInputError,
  OffloadFullError,
  PhronomyError,
  RuntimeShutdownError,
  StaleResultError,
  StoreError,
  type ErrorContext,
} from "../errors.js";

export function errorForCode(code: number, context: ErrorContext): PhronomyError {
  const agent = context.agentId ?? "(unknown agent)";
  const execution = context.executionId ?? "(unknown execution)";
  switch (code as ResultCode) {
    case ResultCode.AgentAlreadyAdmitted:
      return new AgentBusyError(agent);
    case ResultCode.AgentClosed:
      return new AgentClosedError(agent);
    case ResultCode.RuntimeDraining:
      return new RuntimeShutdownError("a new start or resume", context);
    case ResultCode.StartCancelled:
      return new CancellationError(context);
    case ResultCode.OffloadFull:
      return new OffloadFullError(0, context);
    case ResultCode.StoreFailed:
      return new StoreError(`the store failed while committing execution ${execution}`, context);
    case ResultCode.ExecutionsFull:
      return new PhronomyError(
        "CAPACITY",
        `the environment holds its maximum of live executions; agent "${agent}" was not admitted — raise limits.executionsMax or wait`,
        context,
      );
    case ResultCode.AgentsFull:
      return new PhronomyError("CAPACITY", "the environment holds its maximum of agents; raise limits.agentsMax or purge unused agents", context);
    case ResultCode.WaitersFull:
      return new PhronomyError("CAPACITY", `execution ${execution} has its maximum of waiters; wait on an existing run instead`, context);
    case ResultCode.AgentSlotUnknown:
    case ResultCode.AgentGenerationMustMatch:
      return new InvalidInputError(`agent "${agent}" is not registered in this environment (it was purged?); call env.agent() again`, context);
    case ResultCode.RehydrationRequired:
    case ResultCode.ExecutionSlotUnknown:
    case ResultCode.ExecutionGenerationMustMatch:
      return new ExecutionRehydrationRequiredError(`execution ${execution} has no live owner in this environment`, context);
    case ResultCode.ApprovalMustMatch:
      return new ApprovalMismatchError(`the approval id is not the pending approval of execution ${execution}; nothing was decided`, {
        ...context,
        details: { mismatch: "approval_id" },
      });
    case ResultCode.StatusMustMatch:
      return new ApprovalMismatchError(`execution ${execution} is not suspended for approval (already decided, or never suspended); nothing was decided`, {
        ...context,
        details: { mismatch: "not_suspended" },
      });
    case ResultCode.ResumeInProgress:
      return new ApprovalMismatchError(
        `another decision on execution ${execution} is being committed (a different approval, approval or reason than this one); nothing else was decided`,
        { ...context, details: { mismatch: "decision_in_progress" } },
      );
    case ResultCode.AgentMustMatch:
      return new ApprovalMismatchError(`execution ${execution} belongs to another agent than "${agent}"; resume it through its own agent`, {
        ...context,
        details: { mismatch: "agent" },
      });
    case ResultCode.RevisionMustMatch:
    case ResultCode.SessionMustMatch:
    case ResultCode.PhaseMustMatch:
      return new StaleResultError(`the result for execution ${execution} no longer matches its live state (${resultCodeName(code)})`, context);
    case ResultCode.RevisionMustIncrease:
    case ResultCode.OutcomeUnknown:
    case ResultCode.ContinuationInvalid:
      return new ExecutionRehydrationRequiredError(`execution ${execution} could not be applied safely (${resultCodeName(code)})`, context);
    default:
      return new PhronomyError("INTERNAL", `the control core refused a request for execution ${execution} with ${resultCodeName(code)}`, context);
  }
}

/** The store's refusal of a write whose execution id it holds already
 * (`INVALID_INPUT`, reason `execution_exists`): a keyed message queued or
 * run before under that id, by this process or another. */
export function isExecutionExists(error: unknown): boolean {
  return error instanceof PhronomyError && error.code === "INVALID_INPUT" && error.details?.["reason"] === "execution_exists";
}

/** The store's refusal of a write fenced at the epoch it was sent with
 * (`EXECUTION_REHYDRATION_REQUIRED`, reason `lease_lost`): nothing was
 * written, and the lease was taken again since at a later epoch — by this
 * process too (docs/decisions/0134, 0136). */
export function isLeaseLost(error: unknown): boolean {
  return error instanceof PhronomyError && error.code === "EXECUTION_REHYDRATION_REQUIRED" && error.details?.["reason"] === "lease_lost";
}
