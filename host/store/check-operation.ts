// Checks an operation's identity fields before it is queued, so a malformed
// operation is refused at once with `InvalidInputError` naming the field,
// instead of failing later inside a transaction. Content (inputs, steps,
// journal) is the runtime's; only what the store keys and compares on is
// checked here.

import { InvalidInputError } from "../errors.js";
import type { OffloadOperation } from "./records.js";

/** Ids are keys and appear in every error message; 200 characters is far
 * above any generated id and keeps messages and indexes small. */
export const idLengthMax = 200;

const operationTypes: ReadonlySet<string> = new Set([
  "prepareExecution", "providerBarrier", "toolBarrier", "terminalCommit", "ensureAgent", "closeAgent", "purgeAgent",
]);

export function checkId(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0 || value.length > idLengthMax) {
    throw new InvalidInputError(`${field} must be a non-empty string of at most ${idLengthMax} characters, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function checkOperation(operation: OffloadOperation): void {
  if (typeof operation !== "object" || operation === null || !operationTypes.has(operation.type)) {
    throw new InvalidInputError(`unknown store operation ${JSON.stringify((operation as { type?: unknown } | null)?.type)}`);
  }
  if ("executionId" in operation) checkId(operation.executionId, `${operation.type}.executionId`);
  if ("agentId" in operation) checkId(operation.agentId, `${operation.type}.agentId`);
  if ("expectedRevision" in operation && (!Number.isInteger(operation.expectedRevision) || operation.expectedRevision < 1)) {
    throw new InvalidInputError(`${operation.type}.expectedRevision must be a positive integer, got ${String(operation.expectedRevision)}`, { executionId: operation.executionId });
  }
  if ("at" in operation && !Number.isFinite(operation.at)) {
    throw new InvalidInputError(`${operation.type}.at must be a finite number (milliseconds), got ${String(operation.at)}`);
  }
}
