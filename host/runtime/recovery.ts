// Recovery (SPEC §6.2): every unfinished execution in the store is resolved
// from its saved facts into one continuation, installed in the core, and
// continued there — the core validates the continuation against the
// durable phase and refuses what does not fit. What cannot be continued is
// left untouched in the store, reported with its id and phase, and its
// agent's admission is held as recovery_required.
//
// The facts the stores can leave behind (their preparation, barriers and
// terminal commit are each one transaction, and results ride on the next
// barrier):
//   status suspended                      → still waiting: resume works
//   phase calling_llm                     → re-call the model under a new barrier
//   phase dispatching_tools               → re-dispatch the recorded batch, same ids
//   phase resuming, approval granted      → dispatch the approved batch
//   phase resuming, approval declined     → tell the model it was declined
// Anything else — a `preparing` row, a recovery phase, a phase only a live
// session holds — is a state no store writes (docs/decisions/0022). It names
// no continuation (`Continuation.None`): the core installs it, so its agent
// is held, and refuses it; the row is left untouched and reported
// `needs_attention` with ExecutionRehydrationRequired, its status and phase.

import { storedStartInput } from "./start-input.js";
import { startCallSettingsOf } from "./start-call-settings.js";
import { Continuation, ExecutionFlag, ExecutionStatus, MessageKind as M, Phase } from "../../assembly/abi.js";
import type { ExecutionRow, Json, PhaseName } from "../store/records.js";
import type { ControlLoop } from "./control-loop.js";
import type { CoordinatorCalls } from "./coordinator-calls.js";
import type { AgentEntry, ExecutionStart, RecoverySettlement, StartRequest } from "./requests.js";
import { Waiter } from "./run.js";

/** What recovery did with one unfinished execution (`env.recover()`,
 * `env.recovery(agentId)`, `support.recovery()`). */
export interface RecoveredExecution {
  /** The execution. */
  readonly executionId: string;
  /** Its agent (conversation) id. */
  readonly agentId: string;
  /** The phase it was found in. */
  readonly phase: PhaseName;
  /** `continued`: running again; `suspended`: waiting for its approval
   * decision (resume works); `needs_attention`: left untouched, see
   * `reason`; `waiting_for_agent`: its agent is not defined in this
   * environment yet (recovery runs when it is); `queued`: a message still in
   * its conversation's queue (docs/decisions/0025), run in its turn. */
  readonly status: "continued" | "suspended" | "needs_attention" | "waiting_for_agent" | "queued";
  /** How it continues: `recall_model`, `framework_tools` (the recorded
   * batch again, same idempotency keys), `approval_rejection`. */
  readonly continuation?: string;
  /** Why it needs attention, or which definition to define. */
  readonly reason?: string;
}

const PHASES: Record<PhaseName, Phase> = {
  preparing: Phase.Preparing,
  calling_llm: Phase.CallingLlm,
  dispatching_tools: Phase.DispatchingTools,
  recording_tool_results: Phase.RecordingToolResults,
  suspended: Phase.Suspended,
  resuming: Phase.Resuming,
  terminal: Phase.Terminal,
  recovery_provider_completed: Phase.RecoveryProviderCompleted,
  recovery_tools: Phase.RecoveryTools,
  recovery_tools_completed: Phase.RecoveryToolsCompleted,
  recovery_resolved_failed: Phase.RecoveryResolvedFailed,
  // Never read by recovery (a queued message is no execution yet, host/store/queue.ts).
  queued: Phase.None,
};

const CONTINUATION_NAMES: Record<number, string> = {
  [Continuation.FrameworkTools]: "framework_tools",
  [Continuation.ApprovalRejection]: "approval_rejection",
  [Continuation.RecallModel]: "recall_model",
  [Continuation.None]: "none",
};

export function continuationNameOf(continuation: number): string {
  return CONTINUATION_NAMES[continuation] ?? String(continuation);
}

/** The continuation the saved facts name (the core validates it), or
 * `None` for a state no store writes. */
export function continuationOf(row: ExecutionRow): Continuation {
  if (row.status !== "active") return Continuation.None;
  switch (row.phase) {
    case "calling_llm":
      return Continuation.RecallModel;
    case "dispatching_tools":
      return Continuation.FrameworkTools;
    case "resuming":
      return row.metadata.approval?.approved === true ? Continuation.FrameworkTools : Continuation.ApprovalRejection;
    default:
      return Continuation.None;
  }
}

function statusOf(row: ExecutionRow): ExecutionStatus {
  switch (row.status) {
    case "preparing":
      return ExecutionStatus.Preparing;
    case "suspended":
      return ExecutionStatus.Suspended;
    default:
      return ExecutionStatus.Active;
  }
}

function flagsOf(row: ExecutionRow): number {
  return row.metadata.approval?.approved === true ? ExecutionFlag.ApprovalGranted : 0;
}

/** Installs and continues one agent's unfinished executions, oldest first.
 * The agent admits one execution at a time, so a second unfinished one is
 * reported and recovered by a later `env.recover()` once the first ended. */
export async function recoverAgent(
  coordinator: CoordinatorCalls,
  loop: ControlLoop,
  agent: AgentEntry,
  rows: readonly ExecutionRow[],
): Promise<RecoveredExecution[]> {
  const outcomes: RecoveredExecution[] = [];
  for (const row of rows) outcomes.push(await recoverOne(coordinator, loop, agent, row));
  return outcomes;
}

function recoverOne(coordinator: CoordinatorCalls, loop: ControlLoop, agent: AgentEntry, row: ExecutionRow): Promise<RecoveredExecution> {
  const continuation = continuationOf(row);
  const base = { executionId: row.executionId, agentId: row.agentId, phase: row.phase, continuation: continuationNameOf(continuation) };
  return new Promise((resolve) => {
    const settle = (settlement: RecoverySettlement): void => {
      if (settlement.ok) resolve({ ...base, status: settlement.suspended ? "suspended" : "continued" });
      else
        resolve({
          ...base,
          status: "needs_attention",
          reason: `${settlement.error.code}: ${settlement.error.message} (durable status ${row.status}, phase ${row.phase})`,
        });
    };
    // No caller follows it: the definition's listener hears its events (decision 0056).
    const start = startRequestOf(agent, row, new Waiter(agent.id, agent.definition.onEvent));
    const posted = loop.post(
      () => {
        const handle = coordinator.requests.add({ type: "recovery", start, row, continuation, settle, standIn: true });
        installFromRow(coordinator, agent, row, handle);
      },
      { completion: { fail: (error) => settle({ ok: false, error: error as never }) }, label: `the recovery of execution ${row.executionId}` },
    );
    if (!posted) return;
  });
}

/** The start request a row stands for: its input and durable config. */
export function startRequestOf(agent: AgentEntry, row: ExecutionRow, waiter: Waiter): StartRequest {
  return { ...startOf(agent, row), waiter };
}

/** The start a row stands for, without a waiter: what recovery installs,
 * and what a suspended execution let go of here is read back as
 * (docs/decisions/0066). */
export function startOf(agent: AgentEntry, row: ExecutionRow): ExecutionStart {
  const config = row.metadata.config ?? {};
  return {
    type: "start",
    agent,
    ...storedStartInput(row.input),
    options: {
      ...(typeof config["tokenBudget"] === "number" ? { tokenBudget: config["tokenBudget"] } : {}),
      ...(typeof config["maxTurns"] === "number" ? { maxTurns: config["maxTurns"] } : {}),
      ...(typeof config["timeoutMs"] === "number" ? { timeoutMs: config["timeoutMs"] } : {}),
      ...(config["approvalPolicy"] === "always" || config["approvalPolicy"] === "never" ? { approvalPolicy: config["approvalPolicy"] } : {}),
      ...(config["stream"] === true ? { stream: true } : {}),
      ...(isJsonObject(config["metadata"]) ? { metadata: config["metadata"] } : {}),
      ...startCallSettingsOf(config),
    },
    deadline: undefined,
    executionId: row.executionId,
  };
}

/** On the loop: `RecoveryInstall` of the row for the recovery request `handle`. */
export function installFromRow(coordinator: CoordinatorCalls, agent: AgentEntry, row: ExecutionRow, handle: number): void {
  coordinator.apply(M.RecoveryInstall, agent.slot, agent.generation, row.revision, statusOf(row), PHASES[row.phase] ?? 0, flagsOf(row), handle);
}

function isJsonObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
