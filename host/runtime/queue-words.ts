// Small pure words of the conversation queues (conversation-queue.ts):
// a start's busy policy, the errors a queued message's Run is given, the
// store's answer to a head's preparation as the core is told it, and the
// start options a stored message keeps. (How a queued message's Run failed,
// as the core is asked it, is `startAnswerOf`: start-answer.ts.)

import { startCallSettingsOf } from "./start-call-settings.js";
import { HeadOutcome, type ResultCode } from "../../assembly/abi.js";
import { CancellationError, InvalidInputError, type PhronomyError } from "../errors.js";
import type { Json } from "../store/records.js";
import { errorForCode, isExecutionExists, isLeaseLost } from "./error-codes.js";
import type { OnBusyPolicy, StartOptions } from "./options.js";
import type { StartRequest } from "./requests.js";
import { parentLinkOf } from "../store/parent-link.js";

/** The busy policy of a start. */
export function busyPolicyOf(request: StartRequest): OnBusyPolicy {
  return request.options.onBusy ?? request.agent.definition.onBusy ?? "reject";
}

/** The error a `Start` refused with `code` gives its Run. */
export function refusal(request: StartRequest, code: ResultCode): PhronomyError {
  return errorForCode(code, { agentId: request.waiter.agentId, executionId: request.executionId });
}

/** "enqueue" or "interrupt" of a busy conversation on a store with no queue. */
export function noQueueError(agentId: string, policy: OnBusyPolicy): InvalidInputError {
  return new InvalidInputError(
    `agent "${agentId}" is busy and this store keeps no message queue (onBusy "${policy}" needs the SQLite or PostgreSQL store); start with onBusy "reject"`,
    { agentId },
  );
}

/** The store's answer to the preparation of a queue head, as the fact the
 * core is told (`HeadSettled`): failed (`STORE`: its outcome not written,
 * the message still queued), refused for now ("not here, not now": the
 * partition's lease not renewed in time, or lost — `lease_not_held` — or
 * the preparation fenced at the epoch it was sent, which this process
 * lost and may hold again at a later one — `lease_lost`: nothing written,
 * the message still queued, docs/decisions/0134, 0136), refused because its
 * execution id is there already (another process prepared it), or ended
 * for good (any other refusal, or the preparation wrote it terminal). A
 * translation only: what becomes of the head is the core's. */
export function storeAnswerOf(error: PhronomyError): HeadOutcome {
  if (isExecutionExists(error)) return HeadOutcome.ExecutionExists;
  if (error.code === "STORE") return HeadOutcome.StoreFailed;
  if (error.code === "AGENT_BUSY" && error.details?.["reason"] === "lease_not_held") return HeadOutcome.NotNow;
  if (isLeaseLost(error)) return HeadOutcome.NotNow;
  return HeadOutcome.Refused;
}

export function cancellation(executionId: string, agentId: string | undefined, reason: string | undefined): CancellationError {
  return new CancellationError({
    executionId,
    ...(agentId !== undefined ? { agentId } : {}),
    details: { whileQueued: true, ...(reason !== undefined ? { reason } : {}) },
  });
}

/** The start options a queued message keeps (its JSON settings). */
export function optionsOf(config: { readonly [key: string]: Json }): StartOptions {
  return {
    ...(typeof config["tokenBudget"] === "number" ? { tokenBudget: config["tokenBudget"] } : {}),
    ...(typeof config["maxTurns"] === "number" ? { maxTurns: config["maxTurns"] } : {}),
    ...(typeof config["timeoutMs"] === "number" ? { timeoutMs: config["timeoutMs"] } : {}),
    ...(config["approvalPolicy"] === "always" || config["approvalPolicy"] === "never" || config["approvalPolicy"] === "tools"
      ? { approvalPolicy: config["approvalPolicy"] }
      : {}),
    ...(config["metadata"] !== undefined && typeof config["metadata"] === "object" && config["metadata"] !== null && !Array.isArray(config["metadata"])
      ? { metadata: config["metadata"] as { [key: string]: Json } }
      : {}),
    ...(config["stream"] === true ? { stream: true } : {}),
    ...(typeof config["replaceFrom"] === "string" ? { replaceFrom: config["replaceFrom"] } : {}),
    ...(typeof config["messageId"] === "string" ? { messageId: config["messageId"] } : {}),
    ...(config["parent"] !== undefined ? { childOf: parentLinkOf(config["parent"], "a queued start") } : {}),
    ...startCallSettingsOf(config),
  };
}
