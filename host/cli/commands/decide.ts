// `phronomy approve <executionId>`, `phronomy reject <executionId>`,
// `phronomy resume <executionId> --value '<json>'` and `phronomy fire
// <executionId>`: decide an execution's pending approval — approved as
// asked, with edited arguments (`--input`), answered in place of the tool
// (`--respond`) — give its typed wait its value (decision 0075), or fire
// its timer (or a wait's deadline) now (0076, `{ waitId, fire: true }`),
// and carry the execution on to its final
// outcome, which is printed like `run`'s. Whether the answer fits the
// wait (its kind, its schema) is the runtime's call, through the same
// `agent.resume` an application uses: a refused answer fails the command
// and leaves the wait pending. Continuing needs the agent's
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
import { PhronomyError, type AgentDefinition, type Environment, type WaitKind, type ExecutionRow, type StoredStep } from "../../index.js";
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
  /** Edited arguments of the call (JSON text; approve). */
  readonly input?: string;
  /** The call's result in place of the tool (JSON text; approve). */
  readonly respond?: string;
  /** The typed wait's value (JSON text; resume). */
  readonly value?: string;
  /** The call `--input` or `--respond` is for. */
  readonly call?: string;
  /** Who decided (recorded). */
  readonly by?: string;
  readonly agentModule?: string;
  readonly model?: string;
  readonly baseUrl?: string;
}

/** What the command does: approve or reject an approval, give a typed
 * wait its value, or fire a timer (or a wait's deadline) now. */
export type DecideAction = "approve" | "reject" | "resume" | "fire";

export async function decideCommand(context: CliContext, executionArgument: string, action: DecideAction, options: DecideOptions): Promise<ExitCodeValue> {
  const answer = answerOf(action, options);
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
    const verb = verbOf(action);
    const what = pending.kind === "approval" ? "approval" : `${pending.kind} wait`;
    context.logger.line(
      `${verb} execution ${executionId} of agent "${row.agentId}" (${what} ${pending.request.approvalId}, requested ${formatTime(pending.since)}):`,
    );
    for (const call of pending.request.toolCalls) context.logger.line(`    ${call.toolName}(${compactJson(call.input)})`);
    if (environment.visitor)
      context.logger.line(`the store is owned by ${ownerOf(environment)}: the decision is filed for it to apply, and this command waits for the outcome`);
    progress = new Progress();
    context.logger.progress = progress;
    progress.setPhase(phaseOf(action));
    const watch = watchRun(progress);
    const run = agent.resume(executionId, {
      ...(action === "resume" || action === "fire" ? { waitId: approvalId } : { approvalId }),
      ...answer,
      onEvent: watch.onEvent,
    });
    const outcome = await settle(run, watch);
    // Refused before anything was decided (another wait is pending now, an
    // answer of the other kind, a value its schema refuses): the command
    // failed, not the execution, which still waits.
    if (outcome.kind === "failed" && outcome.error instanceof PhronomyError && refusalCodes.has(outcome.error.code)) {
      const now = await environment.execution(executionId);
      if (outcome.error.code === "APPROVAL_MISMATCH" || now?.status === "suspended") throw withKindHint(outcome.error, pending.kind, executionId);
    }
    const moduleArgument = options.agentModule !== undefined ? ` --agent-module ${shellQuote(displayPath(options.agentModule))}` : "";
    return reportOutcome(context, outcome, { agentId: row.agentId, progress, agentModuleArgument: moduleArgument, streamed: false, interrupted: false });
  } finally {
    progress?.stop();
    context.logger.progress = undefined;
    await environment.close();
  }
}

/** Errors that refuse an answer and leave the wait as it was. */
const refusalCodes: ReadonlySet<string> = new Set(["APPROVAL_MISMATCH", "INVALID_INPUT"]);

/** The decision the options ask for, beyond the wait's id: JSON options
 * parsed, and only the ones the action takes. */
function answerOf(action: DecideAction, options: DecideOptions): Record<string, unknown> {
  const allowed: Record<DecideAction, readonly (keyof DecideOptions)[]> = {
    approve: ["input", "respond", "call"],
    reject: [],
    resume: ["value", "call"],
    fire: [],
  };
  for (const key of ["input", "respond", "value", "call"] as const) {
    if (options[key] !== undefined && !allowed[action].includes(key)) {
      throw new CliError("USAGE", `--${key} does not go with \`${action}\`: ${usageOf(key)}`);
    }
  }
  if (options.input !== undefined && options.respond !== undefined)
    throw new CliError("USAGE", "give --input (run the tool with these arguments) or --respond (answer in place of the tool), not both");
  if (action === "resume" && options.value === undefined) throw new CliError("USAGE", "`resume` gives a typed wait its value: --value '<json>'");
  if (action === "fire") return { fire: true, ...(options.by !== undefined ? { decidedBy: options.by } : {}) };
  return {
    ...(action === "resume" ? { value: jsonOption("value", options.value!) } : { approved: action === "approve" }),
    ...(options.input !== undefined ? { input: jsonOption("input", options.input) } : {}),
    ...(options.respond !== undefined ? { respond: jsonOption("respond", options.respond) } : {}),
    ...(options.call !== undefined ? { callId: options.call } : {}),
    ...(options.by !== undefined ? { decidedBy: options.by } : {}),
    ...(options.reason !== undefined ? { reason: options.reason } : {}),
  };
}

function usageOf(key: "input" | "respond" | "value" | "call"): string {
  if (key === "value") return "a typed wait's value is given with `phronomy resume <execution-id> --value '<json>'`";
  if (key === "call") return "it names the call --input, --respond or --value is for";
  return `approve with --${key} '<json>'`;
}

/** The JSON text an option holds, parsed; a usage error naming it when it is not JSON. */
function jsonOption(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError("USAGE", `--${name} must be JSON (quote it for the shell: --${name} '{"date":"2027-03-01"}'): ${(error as Error).message}`);
  }
}

function verbOf(action: DecideAction): string {
  if (action === "reject") return pc.red("rejecting");
  return pc.green(action === "approve" ? "approving" : action === "fire" ? "firing" : "answering");
}

function phaseOf(action: DecideAction): string {
  const committed = { approve: "the approval", reject: "the rejection", resume: "the value", fire: "the firing" }[action];
  return `committing ${committed}`;
}

/** A wait of the other kind refused: say which command answers it. */
function withKindHint(error: PhronomyError, kind: WaitKind, executionId: string): PhronomyError {
  if ((error.details as { mismatch?: unknown } | undefined)?.mismatch !== "wait_kind") return error;
  const hints: Record<WaitKind, string> = {
    input: `it waits for a value: phronomy resume ${executionId} --value '<json>'`,
    approval: `it waits for an approval: phronomy approve ${executionId} (or reject)`,
    event: `it waits for an event: phronomy signal <key> --payload '<json>' (the key is in \`phronomy show ${executionId}\`), as the application's env.signal(key, payload) does`,
    child: "it waits for its child execution, whose end resumes it: answer the child's own wait",
    timer: `it is a timer: the clock fires it at its due time, or now: phronomy fire ${executionId}`,
  };
  const hint = hints[kind];
  return new PhronomyError(error.code, `${error.message}; ${hint}`, {
    ...(error.executionId !== undefined ? { executionId: error.executionId } : {}),
    ...(error.agentId !== undefined ? { agentId: error.agentId } : {}),
    ...(error.details !== undefined ? { details: error.details } : {}),
  });
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
