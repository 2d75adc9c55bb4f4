// Recovery (SPEC §6.2): every unfinished execution in the store is resolved
// from its saved facts into one continuation, installed in the core, and
// continued there — the core validates the continuation against the
// durable phase and refuses what does not fit. What cannot be continued is
// left untouched in the store, reported with its id and phase, and its
// agent's admission is held as recovery_required.
//
// The facts this store can leave behind (its preparation, barriers and
// terminal commit are each one transaction, and results ride on the next
// barrier):
//   status suspended                      → still waiting: resume works
//   phase calling_llm                     → re-call the model under a new barrier
//   phase dispatching_tools               → re-dispatch the recorded batch, same ids
//   phase resuming, approval granted      → dispatch the approved batch
//   phase resuming, approval declined     → tell the model it was declined
// Anything else (a phase this store never writes) is offered to the core as
// it is and reported when refused.

import { Continuation, ExecutionFlag, ExecutionStatus, MessageKind as M, Phase } from "../../assembly/abi.js";
import type { ExecutionRow, PhaseName } from "../store/records.js";
import type { ControlLoop } from "./control-loop.js";
import type { Coordinator } from "./coordinator.js";
import type { AgentEntry, RecoverySettlement, StartRequest } from "./requests.js";
import { Waiter } from "./run.js";

export interface RecoveredExecution {
  readonly executionId: string;
  readonly agentId: string;
  readonly phase: PhaseName;
  /** `continued`: running again; `suspended`: waiting for its approval
   * decision (resume works); `needs_attention`: left untouched, see
   * `reason`; `waiting_for_agent`: its agent is not defined in this
   * environment yet (recovery runs when it is). */
  readonly status: "continued" | "suspended" | "needs_attention" | "waiting_for_agent";
  readonly continuation?: string;
  readonly reason?: string;
}

const PHASES: Record<PhaseName, Phase> = {
  preparing: Phase.Preparing, calling_llm: Phase.CallingLlm, dispatching_tools: Phase.DispatchingTools,
  recording_tool_results: Phase.RecordingToolResults, suspended: Phase.Suspended, resuming: Phase.Resuming,
  terminal: Phase.Terminal, recovery_provider_completed: Phase.RecoveryProviderCompleted, recovery_tools: Phase.RecoveryTools,
  recovery_tools_completed: Phase.RecoveryToolsCompleted, recovery_resolved_failed: Phase.RecoveryResolvedFailed,
};

const CONTINUATION_NAMES: Record<number, string> = {
  [Continuation.FrameworkTools]: "framework_tools", [Continuation.FrameworkCalls]: "framework_calls",
  [Continuation.Output]: "output", [Continuation.Followup]: "followup", [Continuation.FailedTerminal]: "failed_terminal",
  [Continuation.ApprovalRejection]: "approval_rejection", [Continuation.RecallModel]: "recall_model",
  [Continuation.None]: "preparation",
};

export function continuationNameOf(continuation: number): string {
  return CONTINUATION_NAMES[continuation] ?? String(continuation);
}

/** The continuation the saved facts name (the core validates it). */
export function continuationOf(row: ExecutionRow): Continuation {
  const pending = row.metadata.frameworkCallsPending === true;
  switch (row.phase) {
    case "preparing": return Continuation.None;
    case "calling_llm": return Continuation.RecallModel;
    case "dispatching_tools":
    case "recovery_tools": return Continuation.FrameworkTools;
    case "resuming": return row.metadata.approval?.approved === true ? Continuation.FrameworkTools : Continuation.ApprovalRejection;
    case "recovery_provider_completed": return pending ? Continuation.FrameworkCalls : Continuation.Output;
    case "recovery_tools_completed": return pending ? Continuation.FrameworkCalls : Continuation.Followup;
    case "recovery_resolved_failed": return Continuation.FailedTerminal;
    default: return Continuation.RecallModel;
  }
}

function statusOf(row: ExecutionRow): ExecutionStatus {
  switch (row.status) {
    case "preparing": return ExecutionStatus.Preparing;
    case "suspended": return ExecutionStatus.Suspended;
    default: return ExecutionStatus.Active;
  }
}

function flagsOf(row: ExecutionRow): number {
  let flags = 0;
  if (row.metadata.frameworkCallsPending === true) flags |= ExecutionFlag.FrameworkCallsPending;
  if (row.metadata.reservation === true) flags |= ExecutionFlag.Reservation;
  if (row.metadata.approval?.approved === true) flags |= ExecutionFlag.ApprovalGranted;
  return flags;
}

/** Installs and continues one agent's unfinished executions, oldest first.
 * The agent admits one execution at a time, so a second unfinished one is
 * reported and recovered by a later `env.recover()` once the first ended. */
export async function recoverAgent(coordinator: Coordinator, loop: ControlLoop, agent: AgentEntry, rows: readonly ExecutionRow[]): Promise<RecoveredExecution[]> {
  const outcomes: RecoveredExecution[] = [];
  for (const row of rows) outcomes.push(await recoverOne(coordinator, loop, agent, row));
  return outcomes;
}

function recoverOne(coordinator: Coordinator, loop: ControlLoop, agent: AgentEntry, row: ExecutionRow): Promise<RecoveredExecution> {
  const continuation = continuationOf(row);
  const base = { executionId: row.executionId, agentId: row.agentId, phase: row.phase, continuation: continuationNameOf(continuation) };
  return new Promise((resolve) => {
    const settle = (settlement: RecoverySettlement): void => {
      if (settlement.ok) resolve({ ...base, status: settlement.suspended ? "suspended" : "continued" });
      else resolve({ ...base, status: "needs_attention", reason: `${settlement.error.code}: ${settlement.error.message}` });
    };
    const config = row.metadata.config ?? {};
    const start: StartRequest = {
      type: "start", agent, waiter: new Waiter(agent.id, undefined), input: typeof row.input === "string" ? row.input : JSON.stringify(row.input),
      options: {
        ...(typeof config["tokenBudget"] === "number" ? { tokenBudget: config["tokenBudget"] } : {}),
        ...(typeof config["maxTurns"] === "number" ? { maxTurns: config["maxTurns"] } : {}),
        ...(typeof config["timeoutMs"] === "number" ? { timeoutMs: config["timeoutMs"] } : {}),
        ...(config["approvalPolicy"] === "always" || config["approvalPolicy"] === "never" ? { approvalPolicy: config["approvalPolicy"] } : {}),
      },
      deadline: undefined, executionId: row.executionId,
    };
    const posted = loop.post(() => {
      const handle = coordinator.requests.add({ type: "recovery", start, row, continuation, settle });
      coordinator.apply(M.RecoveryInstall, agent.slot, agent.generation, row.revision, statusOf(row), PHASES[row.phase] ?? 0, flagsOf(row), handle);
    }, { completion: { fail: (error) => settle({ ok: false, error: error as never }) }, label: `the recovery of execution ${row.executionId}` });
    if (!posted) return;
  });
}
