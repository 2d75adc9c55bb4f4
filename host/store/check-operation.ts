// Checks an operation's identity fields before it is queued, so a malformed
// operation is refused at once with `InvalidInputError` naming the field,
// instead of failing later inside a transaction. Content (inputs, steps,
// journal) is the runtime's; only what the store keys and compares on is
// checked here.

import { ReplaceFact, ReplaceVerdict } from "../../assembly/abi.js";
import { InvalidInputError } from "../errors.js";
import { checkId } from "./check-id.js";
import type { OffloadOperation } from "./offload-operation.js";
import type { ApprovalCommitOperation, ExecutionStatusName, OutcomeName, ReopenExecutionOperation, TerminalCommitOperation } from "./records.js";

const operationTypes: ReadonlySet<string> = new Set([
  "prepareExecution",
  "providerBarrier",
  "toolBarrier",
  "terminalCommit",
  "approvalCommit",
  "ensureAgent",
  "closeAgent",
  "purgeAgent",
  "enqueueMessage",
  "cancelQueued",
  "reopenExecution",
]);

export function checkOperation(operation: OffloadOperation): void {
  if (typeof operation !== "object" || operation === null || !operationTypes.has(operation.type)) {
    throw new InvalidInputError(`unknown store operation ${JSON.stringify((operation as { type?: unknown } | null)?.type)}`);
  }
  if ("executionId" in operation) checkId(operation.executionId, `${operation.type}.executionId`);
  if ("agentId" in operation) checkId(operation.agentId, `${operation.type}.agentId`);
  if ("expectedRevision" in operation && (!Number.isInteger(operation.expectedRevision) || operation.expectedRevision < 1)) {
    throw new InvalidInputError(`${operation.type}.expectedRevision must be a positive integer, got ${String(operation.expectedRevision)}`, {
      executionId: operation.executionId,
    });
  }
  if ("at" in operation && !Number.isFinite(operation.at)) {
    throw new InvalidInputError(`${operation.type}.at must be a finite number (milliseconds), got ${String(operation.at)}`);
  }
  if (
    (operation.type === "providerBarrier" || operation.type === "toolBarrier")
    && operation.runningSince !== undefined
    && !Number.isFinite(operation.runningSince)
  ) {
    throw new InvalidInputError(`${operation.type}.runningSince must be a finite number (milliseconds), got ${String(operation.runningSince)}`, {
      executionId: operation.executionId,
    });
  }
  if (operation.type === "prepareExecution" && operation.firstBarrier !== undefined) {
    checkId(operation.firstBarrier?.callId, "prepareExecution.firstBarrier.callId");
    if (operation.blockedBy !== undefined) {
      throw new InvalidInputError("prepareExecution.firstBarrier cannot go with blockedBy: a blocked input is written terminal and calls no model", {
        executionId: operation.executionId,
      });
    }
  }
  if (operation.type === "prepareExecution" && operation.replaceFrom !== undefined) {
    checkId(operation.replaceFrom, "prepareExecution.replaceFrom");
    const verdicts = operation.replaceVerdicts;
    const verdictMax = ReplaceVerdict.RefuseNotInMemory;
    if (!Array.isArray(verdicts) || verdicts.length !== ReplaceFact.End || !verdicts.every((v) => Number.isInteger(v) && v >= 0 && v <= verdictMax)) {
      throw new InvalidInputError(
        `prepareExecution.replaceVerdicts must be the core's replaceVerdict for each of the ${ReplaceFact.End} facts (ControlCore.replaceVerdicts()), got ${JSON.stringify(verdicts)?.slice(0, 80)}`,
        { executionId: operation.executionId },
      );
    }
    if (operation.blockedBy !== undefined) {
      throw new InvalidInputError("prepareExecution.replaceFrom cannot go with blockedBy: a blocked input enters no memory and replaces none", {
        executionId: operation.executionId,
      });
    }
  }
  if (operation.type === "approvalCommit") checkApproval(operation);
  if (operation.type === "reopenExecution") checkReopen(operation);
  if (operation.type === "terminalCommit" && operation.toolBatch !== undefined) checkToolBatch(operation);
}

const reopenedPhases: Readonly<Record<string, readonly string[]>> = {
  active: ["calling_llm", "dispatching_tools", "resuming"],
  suspended: ["suspended"],
};

function checkReopen(operation: ReopenExecutionOperation): void {
  const phases = reopenedPhases[operation.status];
  if (phases === undefined || !phases.includes(operation.phase)) {
    throw new InvalidInputError(
      `reopenExecution: status ${JSON.stringify(operation.status)} with phase ${JSON.stringify(operation.phase)} is not a state a retry reopens to (active: calling_llm, dispatching_tools, resuming; suspended: suspended)`,
      { executionId: operation.executionId },
    );
  }
  if (typeof operation.metadata !== "object" || operation.metadata === null || Array.isArray(operation.metadata)) {
    throw new InvalidInputError(`reopenExecution.metadata must be an object, got ${JSON.stringify(operation.metadata)}`, {
      executionId: operation.executionId,
    });
  }
}

function checkApproval(operation: ApprovalCommitOperation): void {
  const context = { executionId: operation.executionId };
  checkId(operation.approvalId, "approvalCommit.approvalId");
  if (typeof operation.approved !== "boolean") {
    throw new InvalidInputError(`approvalCommit.approved must be true or false, got ${JSON.stringify(operation.approved)}`, context);
  }
  if (operation.reason !== null && typeof operation.reason !== "string") {
    throw new InvalidInputError(`approvalCommit.reason must be a string or null, got ${JSON.stringify(operation.reason)}`, context);
  }
  checkId(operation.argumentsHash, "approvalCommit.argumentsHash");
  if (operation.action !== undefined && (typeof operation.action !== "object" || operation.action === null || Array.isArray(operation.action))) {
    throw new InvalidInputError(`approvalCommit.action must be an object, got ${JSON.stringify(operation.action)}`, context);
  }
  if (operation.decidedBy !== undefined && operation.decidedBy !== null && typeof operation.decidedBy !== "string") {
    throw new InvalidInputError(`approvalCommit.decidedBy must be a string or null, got ${JSON.stringify(operation.decidedBy)}`, context);
  }
  if (operation.filedAs !== undefined && operation.filedAs !== null && typeof operation.filedAs !== "string") {
    throw new InvalidInputError(`approvalCommit.filedAs must be a string or null, got ${JSON.stringify(operation.filedAs)}`, context);
  }
  if (operation.toolBatch !== undefined) checkCalls(operation.toolBatch, "approvalCommit.toolBatch", context);
}

function checkToolBatch(operation: TerminalCommitOperation): void {
  const context = { executionId: operation.executionId };
  if (operation.outcome !== "suspended") {
    throw new InvalidInputError(
      `terminalCommit.toolBatch is only for outcome "suspended" (the batch waiting for approval), got outcome ${JSON.stringify(operation.outcome)}`,
      context,
    );
  }
  checkCalls(operation.toolBatch, "terminalCommit.toolBatch", context);
}

function checkCalls(batch: unknown, what: string, context: { readonly executionId: string }): void {
  if (!Array.isArray(batch)) {
    throw new InvalidInputError(`${what} must be an array of tool calls, got ${JSON.stringify(batch)}`, context);
  }
  (batch as unknown[]).forEach((entry, index) => {
    if (typeof entry !== "object" || entry === null) {
      throw new InvalidInputError(`${what}[${index}] must be a tool call record, got ${JSON.stringify(entry)}`, context);
    }
    const call = entry as { callId?: unknown; toolName?: unknown; idempotencyKey?: unknown };
    checkId(call.callId, `${what}[${index}].callId`);
    checkId(call.toolName, `${what}[${index}].toolName`);
    if (typeof call.idempotencyKey !== "string" || call.idempotencyKey.length === 0) {
      throw new InvalidInputError(`${what}[${index}].idempotencyKey must be a non-empty string, got ${JSON.stringify(call.idempotencyKey)}`, context);
    }
  });
}

// -- listing filters --------------------------------------------------------------

/** The statuses a row is stored with (`records.ts`), and the outcomes of
 * rows that ended or suspended: the vocabulary of `listExecutions`. */
export const executionStatusNames: readonly ExecutionStatusName[] = ["preparing", "active", "suspended", "terminal"];
export const outcomeNames: readonly OutcomeName[] = ["completed", "failed", "suspended", "handed_off", "coordination_wait"];
const listFilterKeys = ["status", "outcome", "agentId", "limit"];

/** Refuses a filter key or value the listing does not know, naming the
 * allowed ones, instead of ignoring it or answering nothing. `statuses`:
 * the statuses this caller accepts (the environment adds its own). */
export function checkListFilter(filter: unknown, what: string, statuses: readonly string[] = executionStatusNames): void {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) {
    throw new InvalidInputError(`${what}: the filter must be an object { ${listFilterKeys.join(", ")} }, got ${JSON.stringify(filter)}`);
  }
  for (const key of Object.keys(filter)) {
    if (!listFilterKeys.includes(key)) throw new InvalidInputError(`${what}: unknown filter key "${key}"; known keys: ${listFilterKeys.join(", ")}`);
  }
  const { status, outcome, agentId } = filter as { status?: unknown; outcome?: unknown; agentId?: unknown };
  if (status !== undefined && !statuses.includes(status as string)) {
    const hint =
      outcomeNames.includes(status as OutcomeName) && !statuses.includes(status as string)
        ? ` (${JSON.stringify(status)} is an outcome: filter with { outcome: ${JSON.stringify(status)} })`
        : "";
    throw new InvalidInputError(`${what}: status must be one of ${statuses.join(", ")}, got ${JSON.stringify(status)}${hint}`);
  }
  if (outcome !== undefined && !outcomeNames.includes(outcome as OutcomeName)) {
    throw new InvalidInputError(`${what}: outcome must be one of ${outcomeNames.join(", ")}, got ${JSON.stringify(outcome)}`);
  }
  if (agentId !== undefined) checkId(agentId, `${what}: agentId`);
}
