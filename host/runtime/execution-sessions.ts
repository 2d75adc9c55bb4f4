// The sessions of an execution (SPEC §5): the first one when it is
// installed (`StartSession`), a new one after a decision (`ResumeSession`)
// and the one a recovery continues with (`ContinueSession`). Each is built
// from the start's settings (a recovered execution's durable config), with
// its own time budget (docs/decisions/0016) and span (0056). The
// coordinator carries the effects out through these functions.

import { Continuation, SessionEventKind } from "../../assembly/abi.js";
import type { ConversationMessage } from "../agent/messages.js";
import { ExecutionRehydrationRequiredError } from "../errors.js";
import type { ExecutionRow, JournalRecord } from "../store/records.js";
import { cancelNewSession } from "./cancel-commit.js";
import type { CoordinatorCalls, CoordinatorCallSettings } from "./coordinator-calls.js";
import { agentAttributes } from "./gen-ai-attributes.js";
import { MAX_TURNS_DEFAULT, MAX_TURNS_UNDER_STOP_WHEN_DEFAULT, MEMORY_WINDOW_DEFAULT, type AgentSettings } from "./options.js";
import { stopConditionsOf } from "./loop-settings.js";
import { continuationNameOf } from "./recovery.js";
import type { ExecutionEntry } from "./requests.js";
import { readRecorded } from "./restore.js";
import { asPhronomyError, Session, type SessionHost } from "./session.js";
import type { Tracer } from "./tracing.js";

/** The coordinator, as the sessions it starts use it: its tables, the
 * core, and the host every session reports to. */
export interface SessionCalls extends CoordinatorCalls, SessionHost {
  readonly settings: CoordinatorCallSettings & { readonly tracer: Tracer };
  post(message: () => void): void;
}

/** Effect StartSession: the first session of an execution just installed. */
export function startSession(calls: SessionCalls, slot: number, sessionNumber: number): void {
  const entry = calls.entryAt(slot);
  if (!entry) return;
  const session = createSession(calls, entry, sessionNumber, entry.start.deadline, "start");
  session.begin();
}

/** A session for the entry's execution, with the settings its start (or
 * its durable config, for a recovered one) gave it, ending by `deadline`
 * (each start, resume and recovery has its own: docs/decisions/0016). */
function createSession(
  calls: SessionCalls,
  entry: ExecutionEntry,
  sessionNumber: number,
  deadline: number | undefined,
  run: "start" | "resume" | "recovery",
): Session {
  const slot = entry.slot;
  const { start, agent } = entry;
  const definition = agent.definition;
  // A span per Run (start, resume, recovery): one suspended ended its
  // span, so a resume opens its own (decision 0056).
  // A tracer that throws opening it fails the new session, once built
  // (carryOutOrFail): the run ends through its terminal commit.
  let spanFailure: { error: unknown } | undefined;
  try {
    entry.span ??= calls.settings.tracer.startExecution(agent.id, () => ({
      ...agentAttributes(agent.id, definition),
      "phronomy.agent_id": agent.id,
      "phronomy.execution_id": entry.executionId,
      "phronomy.mode": "invoke",
      "phronomy.run": run,
    }));
  } catch (error) {
    spanFailure = { error };
  }
  const session = new Session(
    slot,
    entry.generation,
    sessionNumber,
    {
      executionId: entry.executionId,
      agentId: agent.id,
      definition,
      tools: agent.tools,
      input: start.filteredInput ?? start.input,
      inputMessages: start.filteredMessages ?? start.inputMessages,
      memory: [],
      approvalPolicy: start.options.approvalPolicy ?? "tools",
      tokenBudget: start.options.tokenBudget ?? definition.tokenBudget,
      maxTurns: start.options.maxTurns ?? definition.maxTurns ?? maxTurnsDefaultOf(definition),
      outputGuardrail: start.options.outputGuardrail ?? definition.outputGuardrail,
      signal: entry.resumeSignal ?? start.options.signal,
      stream: start.options.stream ?? false,
      deadline,
      timeoutMs: timeoutOf(entry),
      tracer: calls.settings.tracer,
      parentSpan: entry.span,
      metadata: start.options.metadata,
      start: start.options,
    },
    calls,
  );
  entry.session = session;
  entry.sessionNumber = sessionNumber;
  entry.suspended = false;
  if (spanFailure) throw spanFailure.error;
  loadMemory(calls, entry, session);
  cancelNewSession(entry, session);
  return session;
}

/** The agent's journal window, before this execution's own input. Loaded
 * while the first barrier is written; the model call waits for it. The
 * first execution an agent (a conversation) ever prepared has none: its
 * store said so (`firstOfAgent`), and nothing is read (decision 0067). */
function loadMemory(calls: SessionCalls, entry: ExecutionEntry, session: Session): void {
  const prepared = entry.start.prepared;
  if (prepared?.outcome === "active" && prepared.firstOfAgent === true) return;
  const window = entry.agent.definition.memoryWindow ?? MEMORY_WINDOW_DEFAULT;
  session.memoryLoaded = calls.settings.store.readJournal(entry.agent.id, window + 1).then(
    (records) => {
      const earlier = records.filter((record) => record.executionId !== entry.executionId).slice(-window);
      session.useMemory(earlier.map(messageOfJournal));
    },
    (error: unknown) => {
      calls.settings.logger.warn(`[phronomy] could not read the memory of agent "${entry.agent.id}": ${String(error)}`);
    },
  );
}

/** The entry's session when it is still number `sessionNumber`. */
export function sessionOf(calls: CoordinatorCalls, slot: number, sessionNumber: number): Session | undefined {
  const session = calls.entryAt(slot)?.session;
  return session && session.number === sessionNumber ? session : undefined;
}

/** Effect ResumeSession: a new session from the durable conversation;
 * approved, the batch runs (after its own barrier); declined, the model is
 * told and the loop goes on. */
export function resumeSession(calls: SessionCalls, slot: number, sessionNumber: number, approved: boolean): void {
  const entry = calls.entryAt(slot);
  if (!entry) return;
  // A resume runs on a budget of its own: the time suspended never counts.
  const timeoutMs = timeoutOf(entry);
  const session = createSession(calls, entry, sessionNumber, timeoutMs === undefined ? undefined : calls.settings.now() + timeoutMs, "resume");
  const reason = entry.resumeReason ?? null;
  entry.approvalRequest = undefined;
  // The row the decision was committed against, when this process
  // committed it: the decision changed none of what is read from it.
  const committedAgainst = entry.resumeRow;
  entry.resumeRow = undefined;
  const rowRead = committedAgainst === undefined ? calls.settings.store.getExecution(entry.executionId) : Promise.resolve(committedAgainst);
  session.restored = Promise.all([rowRead, readRecorded(calls.settings.store, entry.executionId)]).then(([row, { history, records }]) => {
    if (!row) throw new ExecutionRehydrationRequiredError(`execution ${entry.executionId} is no longer in the store`, { executionId: entry.executionId });
    session.restore(history, row.usage, row.metadata.turns ?? 0, records);
    session.planBatch(row.metadata.toolBatch ?? []);
  });
  session.restored.then(
    () =>
      calls.post(() => {
        session.begin();
        if (approved) {
          calls.sessionEvent(session, SessionEventKind.ApprovalGranted);
        } else {
          session.decline(reason, () => {
            calls.sessionEvent(session, SessionEventKind.ApprovalRejected);
            calls.sessionEvent(session, SessionEventKind.StateCompleted);
          });
        }
      }),
    (error: unknown) => calls.post(() => session.fail(asPhronomyError(error, "STORE"))),
  );
}

/** Effect ContinueSession: a recovered execution resumes where its saved
 * facts say (SPEC §6.2): the barrier the continuation needs is already
 * being written (framework_tools, recall_model) and the conversation loads
 * meanwhile, or the decline is told at once (approval_rejection), so the
 * session always moves (decision 0022). */
export function continueSession(calls: SessionCalls, slot: number, sessionNumber: number, continuation: number): void {
  const entry = calls.entryAt(slot);
  const row = entry?.recoveredFrom;
  if (!entry || !row) return;
  const budget = recoveredBudget(row, timeoutOf(entry), calls.settings.now());
  const session = createSession(calls, entry, sessionNumber, budget?.deadline, "recovery");
  session.runningSince = budget?.runningSince;
  session.noteRecovery(row.phase, continuationNameOf(continuation));
  if (continuation === Continuation.FrameworkTools) session.planBatch(row.metadata.toolBatch ?? []);
  session.restored = readRecorded(calls.settings.store, entry.executionId).then(({ history, records }) => {
    session.restore(history, row.usage, row.metadata.turns ?? 0, records);
  });
  session.restored.then(
    () =>
      calls.post(() => {
        session.begin();
        if (continuation === Continuation.ApprovalRejection) {
          session.planBatch(row.metadata.toolBatch ?? []);
          session.decline(row.metadata.approval?.reason ?? null, () => {
            calls.sessionEvent(session, SessionEventKind.ApprovalRejected);
            calls.sessionEvent(session, SessionEventKind.StateCompleted);
          });
        }
      }),
    (error: unknown) => calls.post(() => session.fail(asPhronomyError(error, "STORE"))),
  );
}

/** The turn limit a definition gets when neither it nor the start sets
 * one: under `stopWhen`, its conditions decide first (decision 0081). */
function maxTurnsDefaultOf(definition: AgentSettings): number {
  return stopConditionsOf(definition) === undefined ? MAX_TURNS_DEFAULT : MAX_TURNS_UNDER_STOP_WHEN_DEFAULT;
}

/** The running-time budget of an execution: its start's timeoutMs (a
 * recovered one's durable config), else its agent's. */
function timeoutOf(entry: ExecutionEntry): number | undefined {
  return entry.start.options.timeoutMs ?? entry.agent.definition.timeoutMs;
}

/** What a recovered execution has left of its budget (docs/decisions/0016):
 * the running time accrued durably — from the start of its running stretch
 * (`metadata.runningSince`, else its creation) to its last write — is
 * spent; the time the process was down is not. `runningSince` is that
 * stretch's start moved onto this process's clock, for its next barrier. */
function recoveredBudget(row: ExecutionRow, timeoutMs: number | undefined, now: number): { deadline: number; runningSince: number } | undefined {
  if (timeoutMs === undefined) return undefined;
  const ran = Math.max(0, row.updatedAt - (row.metadata.runningSince ?? row.createdAt));
  return { deadline: now + Math.max(0, timeoutMs - ran), runningSince: now - ran };
}

function messageOfJournal(record: JournalRecord): ConversationMessage {
  const text = typeof record.content === "string" ? record.content : JSON.stringify(record.content);
  return record.role === "assistant" ? { role: "assistant", text, toolCalls: [] } : { role: "user", content: text };
}
