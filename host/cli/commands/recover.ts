// `phronomy recover [--agent-module <path>…]`: runs recovery (SPEC §6.2)
// over the store and reports each unfinished execution: continued (and how
// it then ended), still waiting for approval, left for attention (with the
// reason), or waiting for its agent's module. Continuing needs the agent's
// model and tools, so each agent to recover is named by `--agent-module`
// (repeatable); the demo agent is built in. Exit 0 when nothing is left
// that needs a person (waiting for approval is not, nor an agent another
// live process owns on a PostgreSQL store: that process recovers it), 1
// otherwise.

import type { CliContext } from "../context.js";
import { shellQuote } from "../context.js";
import { ExitCode, type ExitCodeValue } from "../errors.js";
import { colorState, printJson, stateOf, table } from "../format.js";
import { agentFor } from "../lookup.js";
import { loadAgentModule } from "../agent-module.js";
import { DEMO_AGENT_ID } from "../demo-agent.js";
import { createModel, modelSettingsOf } from "../models.js";
import { Progress } from "../progress.js";
import { waitUntilSettled } from "../recovered.js";
import { openStore, resolveStore } from "../store.js";
import type { Environment, ExecutionRow, Json, RecoveredExecution, StoredError } from "../../index.js";
import { displayPath } from "./run.js";

export interface RecoverOptions {
  readonly agentModule?: readonly string[];
  readonly model?: string;
  readonly baseUrl?: string;
}

/** `owned_elsewhere`: on a PostgreSQL store, another live process holds
 * the agent's lease; it recovers the execution (docs/decisions/0010). */
type ReportStatus = RecoveredExecution["status"] | "owned_elsewhere";

interface RecoveryEntry {
  readonly executionId: string;
  readonly agentId: string;
  readonly phase: string;
  readonly status: ReportStatus;
  readonly continuation?: string;
  readonly reason?: string;
  /** How a continued execution ended (or suspended again). */
  readonly result?: Pick<ExecutionRow, "status" | "phase" | "outcome"> & { readonly output: Json; readonly error: StoredError | null };
}

export async function recoverCommand(context: CliContext, options: RecoverOptions): Promise<ExitCodeValue> {
  const location = resolveStore(context.options.store, { mustExist: true });
  const model = await createModel(modelSettingsOf(options));
  const modules = await Promise.all((options.agentModule ?? []).map((path) => loadAgentModule(path, { model, storePath: location.path })));
  const environment = await openStore(location, { logger: context.logger, recover: false });
  let progress: Progress | undefined;
  let entries: RecoveryEntry[];
  try {
    for (const { definition } of modules) environment.agent(definition);
    const unfinished = await environment.admin.unfinished();
    const defined = new Set(modules.map(({ definition }) => definition.id));
    if (!defined.has(DEMO_AGENT_ID) && unfinished.some((row) => row.agentId === DEMO_AGENT_ID)) {
      environment.agent((await agentFor(DEMO_AGENT_ID, undefined, { model, storePath: location.path }, "the demo")).definition);
    }
    progress = new Progress();
    context.logger.progress = progress;
    progress.setPhase(`recovering ${unfinished.length} unfinished execution${unfinished.length === 1 ? "" : "s"}`);
    const report = await environment.recover();
    entries = [...(await resolved(environment, report, unfinished, progress)), ...ownedElsewhere(environment, unfinished, report)];
  } finally {
    progress?.stop();
    context.logger.progress = undefined;
    await environment.close();
  }
  const summary = summaryOf(entries);
  if (context.json) printJson({ store: location.path, executions: entries, summary });
  else printHuman(context, location.path, entries, summary, options);
  return summary.needsAttention + summary.waitingForAgent > 0 ? ExitCode.failure : ExitCode.ok;
}

/** Waits for every continued execution to end or suspend again. */
async function resolved(
  environment: Environment,
  report: readonly RecoveredExecution[],
  unfinished: readonly ExecutionRow[],
  progress: Progress,
): Promise<RecoveryEntry[]> {
  const entries: RecoveryEntry[] = [];
  for (const item of report) {
    const row = unfinished.find((candidate) => candidate.executionId === item.executionId);
    if (item.status === "waiting_for_agent" && row?.status === "suspended") {
      // Waiting for a decision, not for recovery: `approve` defines its agent.
      entries.push({ ...item, status: "suspended", reason: "waiting for an approval decision" });
      continue;
    }
    if (item.status !== "continued") {
      entries.push({ ...item });
      continue;
    }
    progress.log(`execution ${item.executionId} of agent "${item.agentId}": continued from phase ${item.phase} (${item.continuation ?? "?"})`);
    const settled = await waitUntilSettled(environment, item.executionId);
    progress.log(`execution ${item.executionId}: ${stateOf(settled)}${settled.error ? ` [${settled.error.code}]` : ""}`);
    entries.push({ ...item, result: { status: settled.status, phase: settled.phase, outcome: settled.outcome, output: settled.output, error: settled.error } });
  }
  return entries;
}

/** Unfinished executions of agents defined here whose lease another live
 * process holds: `env.recover()` leaves them to that process. */
function ownedElsewhere(environment: Environment, unfinished: readonly ExecutionRow[], report: readonly RecoveredExecution[]): RecoveryEntry[] {
  if (environment.admin.storeKind !== "postgres") return [];
  const reported = new Set(report.map((item) => item.executionId));
  return unfinished
    .filter((row) => !reported.has(row.executionId) && environment.admin.ownedElsewhere(row.agentId))
    .map((row) => ({
      executionId: row.executionId,
      agentId: row.agentId,
      phase: row.phase,
      status: "owned_elsewhere",
      reason: `another live process owns agent "${row.agentId}" (its lease is named in the warning above) and recovers it; if that process is gone, run recover again once its lease expires`,
    }));
}

interface RecoverySummary {
  readonly resolved: number;
  readonly waitingForApproval: number;
  readonly needsAttention: number;
  readonly waitingForAgent: number;
  readonly ownedElsewhere: number;
  readonly queued: number;
}

function summaryOf(entries: readonly RecoveryEntry[]): RecoverySummary {
  const count = (predicate: (entry: RecoveryEntry) => boolean) => entries.filter(predicate).length;
  return {
    resolved: count((entry) => entry.status === "continued" && entry.result?.status === "terminal"),
    waitingForApproval: count((entry) => entry.status === "suspended" || entry.result?.status === "suspended"),
    needsAttention: count((entry) => entry.status === "needs_attention"),
    waitingForAgent: count((entry) => entry.status === "waiting_for_agent"),
    ownedElsewhere: count((entry) => entry.status === "owned_elsewhere"),
    queued: count((entry) => entry.status === "queued"),
  };
}

function printHuman(context: CliContext, storePath: string, entries: readonly RecoveryEntry[], summary: RecoverySummary, options: RecoverOptions): void {
  if (entries.length === 0) {
    process.stdout.write(`nothing to recover: every execution in the store at ${storePath} has ended\n`);
    return;
  }
  const modules = (options.agentModule ?? []).map((path) => ` --agent-module ${shellQuote(displayPath(path))}`).join("");
  process.stdout.write(
    `${table(
      ["execution", "agent", "phase", "recovery", "now"],
      entries.map((entry) => [entry.executionId, entry.agentId, entry.phase, recoveryText(entry), nowText(context, entry, modules)]),
    )}\n`,
  );
  const parts = [`${summary.resolved} resolved`, `${summary.waitingForApproval} waiting for approval`, `${summary.needsAttention} need attention`];
  if (summary.waitingForAgent > 0) parts.push(`${summary.waitingForAgent} need their agent module (--agent-module)`);
  if (summary.ownedElsewhere > 0) parts.push(`${summary.ownedElsewhere} owned by another live process`);
  if (summary.queued > 0) parts.push(`${summary.queued} queued`);
  process.stdout.write(`${parts.join(" · ")}\n`);
}

function recoveryText(entry: RecoveryEntry): string {
  switch (entry.status) {
    case "continued":
      return `continued (${entry.continuation ?? "?"})`;
    case "suspended":
      return "still waiting for approval";
    case "needs_attention":
      return "left for attention";
    case "waiting_for_agent":
      return "needs its agent module";
    case "owned_elsewhere":
      return "owned by another process";
    case "queued":
      return "still queued";
  }
}

function nowText(context: CliContext, entry: RecoveryEntry, modules: string): string {
  if (entry.result) return colorState(stateOf(entry.result)) + (entry.result.error ? ` [${entry.result.error.code}]` : "");
  if (entry.status === "suspended") return `phronomy approve ${entry.executionId}${modules}${context.storeArgument()}`;
  return entry.reason ?? "";
}
