// The preparation of a start (SPEC §4.1): the execution's first row, with
// its input as the guardrail let it through and the first provider barrier
// written in the same transaction (docs/decisions/0014); a failed
// transaction is read back before the core hears of it (0020). The
// coordinator carries `SubmitPrepare` out through this.

import { randomUUID } from "node:crypto";
import { MessageKind as M, PreparationOutcome, Submission } from "../../assembly/abi.js";
import type { Json, JournalRecord, StoredError } from "../store/records.js";
import type { CoordinatorCalls } from "./coordinator-calls.js";
import { guardrailFailedMessage, type CheckedVerdict } from "./options.js";
import type { AgentEntry, StartRequest } from "./requests.js";
import { asPhronomyError } from "./session.js";
import { inputVerdictOf, persistedInput, redactedStartInput } from "./start-input.js";
import { configOfStartCallSettings } from "./start-call-settings.js";

/** Effect SubmitPrepare: the execution's first row (with its first barrier),
 * its input checked by the guardrail first. */
export function submitPrepare(calls: CoordinatorCalls, agent: AgentEntry, request: StartRequest, ownerToken: number, handle: number): void {
  const agentSlot = agent.slot;
  // A queued message runs under the id it was given when queued.
  const executionId = request.executionId ?? randomUUID();
  request.executionId = executionId;
  // A guardrail that throws blocks (decision 0056): the run fails, durably.
  const verdict = inputVerdictOf(request, agent);
  const filtered = verdict.action === "redact" ? redactedStartInput(request, verdict.text) : request;
  const input = filtered.input;
  request.filteredInput = input;
  request.filteredMessages = filtered.inputMessages;
  const now = calls.settings.now();
  const blockedBy = verdict.action === "block" ? inputBlocked(agent.id, verdict) : undefined;
  const journal: JournalRecord[] = blockedBy ? [] : [{ executionId, role: "user", content: input, at: now }];
  // The first thing an admitted execution does is call the model under a
  // provider barrier: write that barrier with the preparation, one
  // transaction instead of two (docs/decisions/0014).
  const firstBarrier = blockedBy ? undefined : { callId: randomUUID() };
  const ready = (outcome: number, revision: number): void =>
    calls.post(() => {
      calls.apply(M.InitialPreparationReady, agentSlot, agent.generation, ownerToken, outcome, revision, 0, handle);
    });
  let submitted: Promise<unknown>;
  try {
    submitted = calls.settings.store
      .run({
        type: "prepareExecution",
        executionId,
        agentId: agent.id,
        mode: "invoke",
        input: persistedInput(filtered),
        config: configOf(request),
        ...(blockedBy ? { blockedBy } : {}),
        ...(firstBarrier ? { firstBarrier } : {}),
        // A blocked input replaces nothing: memory stays as it was.
        // Whether it may is the core's verdict on what the transaction reads (docs/decisions/0087).
        ...(request.options.replaceFrom !== undefined && !blockedBy
          ? { replaceFrom: request.options.replaceFrom, replaceVerdicts: calls.settings.core.replaceVerdicts() }
          : {}),
        journal,
        at: now,
      })
      .then((prepared) => {
        request.prepared = prepared;
        if (firstBarrier && prepared.outcome === "active" && prepared.firstBarrierRevision !== undefined) {
          request.firstBarrier = { callId: firstBarrier.callId, revision: prepared.firstBarrierRevision };
        }
        if (prepared.outcome === "active") return ready(PreparationOutcome.Active, prepared.revision);
        if (prepared.outcome === "terminal") return ready(PreparationOutcome.Terminal, prepared.revision);
        return ready(PreparationOutcome.NotEstablished, 0);
      });
  } catch (error) {
    request.storeError = asPhronomyError(error, "STORE");
    calls.apply(M.SubmissionRefused, Submission.Prepare, agentSlot, agent.generation, ownerToken, handle);
    return;
  }
  submitted.catch((error: unknown) => {
    request.storeError = asPhronomyError(error, "STORE");
    readBackPreparation(calls, request, executionId, ready);
  });
}

/** The preparation's transaction failed: whether it wrote anything is
 * read back from the store (docs/decisions/0020). A SQLite transaction
 * that failed wrote nothing; a PostgreSQL commit whose connection was
 * lost may have committed. No row: the start fails with the store's
 * error and the agent admits again. A row: the execution was prepared
 * and goes on as if the store had answered. The read failing too (the
 * store is down): the agent is held, and `env.recover()` reads the rows
 * again and releases it (`DischargeAgentRecovery`). */
function readBackPreparation(calls: CoordinatorCalls, request: StartRequest, executionId: string, ready: (outcome: number, revision: number) => void): void {
  // A store that broke down (its file removed or replaced, its worker lost
  // for good) refuses this read like every other: the agent is held, and
  // the store refuses every start and recovery until it is opened again
  // (docs/decisions/0021).
  calls.settings.store.getExecution(executionId).then(
    (row) => {
      if (!row) return ready(PreparationOutcome.NotEstablished, 0);
      if (row.status === "terminal") {
        request.prepared = {
          outcome: "terminal",
          revision: row.revision,
          error: row.error ?? { code: "STORE", message: request.storeError?.message ?? "the store failed" },
        };
        return ready(PreparationOutcome.Terminal, row.revision);
      }
      request.storeError = undefined;
      request.prepared = { outcome: "active", revision: row.revision };
      return ready(PreparationOutcome.Active, row.revision);
    },
    () => ready(PreparationOutcome.StoreFailed, 0),
  );
}

/** The error a blocked input is written terminal with. */
function inputBlocked(agentId: string, verdict: CheckedVerdict & { readonly action: "block" }): StoredError {
  const message =
    verdict.failed === undefined
      ? `the input guardrail of agent "${agentId}" blocked the input: ${verdict.reason}`
      : guardrailFailedMessage("input", `of agent "${agentId}"`, verdict.failed);
  return { code: "INPUT_BLOCKED", message, details: { reason: verdict.reason, ...(verdict.failed !== undefined ? { guardrailFailed: true } : {}) } };
}

export function configOf(request: StartRequest): { [key: string]: Json } {
  const config: { [key: string]: Json } = {};
  if (request.options.tokenBudget !== undefined) config.tokenBudget = request.options.tokenBudget;
  if (request.options.maxTurns !== undefined) config.maxTurns = request.options.maxTurns;
  // The budget in force (the start's, else the agent's), so a recovery
  // honours it whatever the agent's definition says then.
  const timeoutMs = request.options.timeoutMs ?? request.agent.definition.timeoutMs;
  if (timeoutMs !== undefined) config.timeoutMs = timeoutMs;
  if (request.options.approvalPolicy !== undefined) config.approvalPolicy = request.options.approvalPolicy;
  if (request.options.metadata !== undefined) config.metadata = request.options.metadata as Json;
  // A recovered (or retried) execution streams as its start asked (decision 0056).
  if (request.options.stream === true) config.stream = true;
  // Kept so a queued start still replaces when it runs, and as the record
  // of what this execution replaced (docs/decisions/0070).
  if (request.options.replaceFrom !== undefined) config.replaceFrom = request.options.replaceFrom;
  // The client's id of the user message, for the history (decision 0081).
  if (request.options.messageId !== undefined) config.messageId = request.options.messageId;
  // A child's parent (decision 0079): its terminal commit files its end there.
  if (request.options.childOf !== undefined) config.parent = { ...request.options.childOf };
  // The AI SDK settings the start gave (decision 0071).
  configOfStartCallSettings(request.options, config);
  // The definition a conversation belongs to: recovery at open finds its
  // definition by this name (docs/decisions/0024-conversations.md).
  if (request.agent.definitionName !== undefined) config.definition = request.agent.definitionName;
  return config;
}
