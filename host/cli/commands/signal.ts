// `phronomy signal <key> [--payload '<json>'] [--if-waiting] [--keep-for
// <duration>]`: send an event to the wait keyed on it (a `waitForEvent()`
// call, docs/decisions/0077) through `env.signal` — the call the
// application's webhook makes — and carry the execution it resumes on to
// its outcome, printed like `run`'s. With no wait on the key the event is
// kept for the next one (`--if-waiting` refuses instead), and nothing
// runs.
//
// As the store's owner the execution runs here, so its agent is defined
// first (`--agent-module`, or the built-in demo agent). Beside a live owner
// the command is a visitor (docs/decisions/0015): `env.signal` files the
// event for the owner, which runs the execution on; the command follows it
// to its outcome.

import pc from "../colors.js";
import { ApprovalRequiredError, type Environment, type PendingApproval, type SignalOptions, type SignalResult } from "../../index.js";
import type { CliContext } from "../context.js";
import { CliError, ExitCode, type ExitCodeValue } from "../errors.js";
import { formatTime, printJson } from "../format.js";
import { agentFor } from "../lookup.js";
import { createModel, modelSettingsOf } from "../models.js";
import { reportOutcome, settle, watchRun, type Outcome } from "../outcome.js";
import { Progress } from "../progress.js";
import { openStore, resolveStore } from "../store.js";
import { parseDuration } from "./prune.js";

export interface SignalCommandOptions {
  readonly payload?: string;
  readonly ifWaiting?: boolean;
  readonly keepFor?: string;
  readonly agentModule?: string;
  readonly model?: string;
  readonly baseUrl?: string;
}

export async function signalCommand(context: CliContext, key: string, options: SignalCommandOptions): Promise<ExitCodeValue> {
  const payload = payloadOf(options.payload);
  const signalOptions = signalOptionsOf(options);
  const location = resolveStore(context.options.store, { mustExist: true });
  const model = await createModel(modelSettingsOf(options));
  const environment = await openStore(location, { logger: context.logger, visitBesideOwner: true });
  try {
    const waiting = (await environment.pendingApprovals()).find((pending) => pending.key === key);
    if (waiting !== undefined && !environment.visitor) {
      // The execution runs here: its agent must be defined before the signal resumes it.
      const loaded = await agentFor(
        waiting.agentId,
        options.agentModule,
        { model, storePath: location.path },
        `the wait on key "${key}" (execution ${waiting.executionId})`,
      );
      environment.agent(loaded.definition);
      await environment.recovery(loaded.definition.id);
    }
    if (waiting !== undefined) announce(context, environment, key, waiting);
    const sent = await environment.signal(key, payload, signalOptions);
    if (sent.status === "stored") return reportStored(context, sent);
    return await followToOutcome(context, environment, sent);
  } finally {
    await environment.close();
  }
}

function payloadOf(text: string | undefined): unknown {
  if (text === undefined) return null;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError("USAGE", `--payload must be JSON (quote it for the shell: --payload '{"paid":true}'): ${(error as Error).message}`);
  }
}

function signalOptionsOf(options: SignalCommandOptions): SignalOptions {
  return {
    ...(options.ifWaiting === true ? { ifWaiting: true } : {}),
    ...(options.keepFor !== undefined ? { keepForMs: parseDuration(options.keepFor, "--keep-for") } : {}),
  };
}

function announce(context: CliContext, environment: Environment, key: string, waiting: PendingApproval): void {
  context.logger.line(
    `${pc.green("signalling")} "${key}": execution ${waiting.executionId} of agent "${waiting.agentId}" waits on it (wait ${waiting.request.approvalId}, since ${formatTime(waiting.since)})`,
  );
  if (environment.visitor) context.logger.line("the store has a live owner: the event is filed for it to apply, and this command waits for the outcome");
}

function reportStored(context: CliContext, sent: Extract<SignalResult, { status: "stored" }>): ExitCodeValue {
  if (context.json) printJson(sent);
  else context.say(`no wait on "${sent.key}" now: the event is kept for the next wait on it until ${formatTime(sent.keptUntil)}`);
  return ExitCode.ok;
}

/** The resumed execution, followed to its outcome (or its next wait). */
async function followToOutcome(context: CliContext, environment: Environment, sent: Extract<SignalResult, { status: "resumed" }>): Promise<ExitCodeValue> {
  const progress = new Progress();
  context.logger.progress = progress;
  try {
    const outcome = suspendedOf(await settle(environment.wait(sent.executionId), watchRun(progress)));
    return reportOutcome(context, outcome, { agentId: sent.agentId, progress, agentModuleArgument: "", streamed: false, interrupted: false });
  } finally {
    progress.stop();
    context.logger.progress = undefined;
  }
}

/** `env.wait` rejects when the execution suspends again: that is its next wait, not a failure. */
function suspendedOf(outcome: Outcome): Outcome {
  if (outcome.kind !== "failed" || !(outcome.error instanceof ApprovalRequiredError) || outcome.error.request === undefined) return outcome;
  return { kind: "suspended", request: outcome.error.request as Extract<Outcome, { kind: "suspended" }>["request"] };
}
