// `phronomy approve <executionId>` and `phronomy reject <executionId>`:
// decide an execution's pending approval and carry the execution on to its
// final outcome, which is printed like `run`'s. Continuing needs the agent's
// model and tools, so the agent module is loaded (`--agent-module`, or the
// built-in demo agent for the demo's executions).
//
// Flow: open the store as its owner → find the execution → check it waits
// for approval → define its agent (recovery reinstalls the suspended
// execution) → `agent.resume` with the pending approval's id → wait.
// `--approval-id` pins the decision to the request the user saw: a
// different pending request is refused (APPROVAL_MISMATCH), nothing decided.
//
// Beside a live owner (an application owns the SQLite store) the command is
// a visitor (docs/decisions/0015): it files the decision in the store's
// approval inbox, the owner applies it and runs the execution on, and the
// command waits for the outcome and prints it. The owner has the agent's
// model and tools, so no agent module is needed then.

import pc from "../colors.js";
import { scriptedModel } from "../../testing.js";
import { PhronomyError, type AgentDefinition, type Environment, type ExecutionRow, type StoredStep } from "../../index.js";
import type { CliContext } from "../context.js";
import { shellQuote } from "../context.js";
import { CliError, ExitCode, type ExitCodeValue } from "../errors.js";
import { compactJson, formatTime, stateOf } from "../format.js";
import { agentFor, findExecution } from "../lookup.js";
import { createModel, modelSettingsOf } from "../models.js";
import { reportOutcome, settle, watchRun } from "../outcome.js";
import { Progress } from "../progress.js";
import { openStore, resolveStore } from "../store.js";
import { displayPath } from "./run.js";

export interface DecideOptions {
  readonly reason?: string;
  readonly approvalId?: string;
  readonly agentModule?: string;
  readonly model?: string;
  readonly baseUrl?: string;
}

export async function decideCommand(context: CliContext, executionArgument: string, approved: boolean, options: DecideOptions): Promise<ExitCodeValue> {
  const location = resolveStore(context.options.store, { mustExist: true });
  const model = await createModel(modelSettingsOf(options));
  const environment = await openStore(location, { logger: context.logger, visitBesideOwner: true });
  let progress: Progress | undefined;
  try {
    const row = await findExecution(environment, location.path, executionArgument);
    const executionId = row.executionId;
    if (row.status !== "suspended") throw notWaiting(executionId, row, await environment.timeline(executionId));
    const definition = environment.visitor
      ? visitorDefinition(row.agentId)
      : (await agentFor(row.agentId, options.agentModule, { model, storePath: location.path }, `execution ${executionId}`)).definition;
    const agent = environment.agent(definition);
    await environment.recovery(definition.id);
    const pending = (await environment.pendingApprovals()).find((approval) => approval.executionId === executionId);
    if (!pending) throw notWaiting(executionId, (await environment.execution(executionId)) ?? row, await environment.timeline(executionId));
    const approvalId = options.approvalId ?? pending.request.approvalId;
    const verb = approved ? pc.green("approving") : pc.red("rejecting");
    context.logger.line(
      `${verb} execution ${executionId} of agent "${row.agentId}" (approval ${pending.request.approvalId}, requested ${formatTime(pending.since)}):`,
    );
    for (const call of pending.request.toolCalls) context.logger.line(`    ${call.toolName}(${compactJson(call.input)})`);
    if (environment.visitor)
      context.logger.line(`the store is owned by ${ownerOf(environment)}: the decision is filed for it to apply, and this command waits for the outcome`);
    progress = new Progress();
    context.logger.progress = progress;
    progress.setPhase(approved ? "committing the approval" : "committing the rejection");
    const watch = watchRun(progress);
    const run = agent.resume(executionId, {
      approvalId,
      approved,
      onEvent: watch.onEvent,
      ...(options.reason !== undefined ? { reason: options.reason } : {}),
    });
    const outcome = await settle(run, watch);
    // Refused before anything was decided (another approval is pending now):
    // the command failed, not the execution.
    if (outcome.kind === "failed" && outcome.error instanceof PhronomyError && outcome.error.code === "APPROVAL_MISMATCH") throw outcome.error;
    const moduleArgument = options.agentModule !== undefined ? ` --agent-module ${shellQuote(displayPath(options.agentModule))}` : "";
    return reportOutcome(context, outcome, { agentId: row.agentId, progress, agentModuleArgument: moduleArgument, streamed: false, interrupted: false });
  } finally {
    progress?.stop();
    context.logger.progress = undefined;
    await environment.close();
  }
}

/** A visitor's agent only files decisions: the owner runs the execution
 * with its own model and tools, so this model is never called. */
function visitorDefinition(agentId: string): AgentDefinition {
  return { id: agentId, model: scriptedModel([]) };
}

function ownerOf(environment: Environment): string {
  const owner = environment.admin.owner();
  return owner === undefined ? "another process" : `process ${owner.pid} on ${owner.hostname}`;
}

function notWaiting(executionId: string, row: ExecutionRow, timeline: readonly StoredStep[]): CliError {
  const decided = timeline.findLast((step) => step.kind === "approval_decided");
  const decision =
    decided === undefined
      ? ""
      : ` (its last approval was ${(decided.payload as { approved?: unknown } | null)?.approved === true ? "approved" : "rejected"} at ${formatTime(decided.at)})`;
  const hint = row.status === "terminal" ? decision : "; `phronomy recover` continues it";
  return new CliError("NOT_WAITING_FOR_APPROVAL", `execution ${executionId} is not waiting for approval: it is ${stateOf(row)}${hint}`, ExitCode.failure, {
    details: { executionId, status: row.status, phase: row.phase, outcome: row.outcome },
  });
}
