// `phronomy retry <executionId>`: continue a failed, timed-out or cancelled
// execution from its last durable step as a new attempt (docs/decisions/0026)
// through the public API, `env.retry`, and print its outcome like `run`'s.
// Continuing runs the agent's model and tools, so the agent module is
// loaded (`--agent-module`, or the built-in demo agent for the demo's
// executions), as for `approve`. Beside a live owner of a SQLite store the
// command is a visitor (docs/decisions/0015): the retry is filed in the
// store's inbox, the owner runs the new attempt with its own agents (no
// agent module is loaded here) and the command prints the outcome. On
// PostgreSQL, the process holding the agent's lease retries it the same way.

import { PhronomyError } from "../../index.js";
import type { CliContext } from "../context.js";
import { shellQuote } from "../context.js";
import { type ExitCodeValue } from "../errors.js";
import { agentFor, findExecution } from "../lookup.js";
import { createModel, modelSettingsOf } from "../models.js";
import { reportOutcome, settle, watchRun } from "../outcome.js";
import { Progress } from "../progress.js";
import { openStore, resolveStore } from "../store.js";
import { displayPath } from "./run.js";

/** Codes of a retry refused with nothing written. */
const REFUSALS: ReadonlySet<string> = new Set(["RETRY_REFUSED", "AGENT_BUSY", "EXECUTION_NOT_FOUND", "INVALID_INPUT"]);

export interface RetryCommandOptions {
  readonly agentModule?: string;
  readonly model?: string;
  readonly baseUrl?: string;
}

export async function retryCommand(context: CliContext, executionArgument: string, options: RetryCommandOptions): Promise<ExitCodeValue> {
  const location = resolveStore(context.options.store, { mustExist: true });
  const environment = await openStore(location, { logger: context.logger, visitBesideOwner: true, recover: false });
  let progress: Progress | undefined;
  try {
    const row = await findExecution(environment, location.path, executionArgument);
    const executionId = row.executionId;
    if (!environment.visitor) {
      const model = await createModel(modelSettingsOf(options));
      const { definition } = await agentFor(row.agentId, options.agentModule, { model, storePath: location.path }, `execution ${executionId}`);
      environment.agent(definition);
    }
    const attempt = (row.metadata.attempt ?? 1) + 1;
    const where = environment.visitor ? "; the store's owner runs it and this command waits for the outcome" : "";
    context.say(
      `retrying execution ${executionId} of agent "${row.agentId}" as attempt ${attempt} (it ended ${row.outcome ?? row.status}${row.error ? `: ${row.error.code}` : ""})${where}`,
    );
    progress = new Progress();
    context.logger.progress = progress;
    progress.setPhase("reopening the execution");
    const watch = watchRun(progress);
    const outcome = await settle(environment.retry(executionId, { onEvent: watch.onEvent }), watch);
    // Refused before anything was reopened: the command failed, not the execution.
    if (outcome.kind === "failed" && outcome.error instanceof PhronomyError && REFUSALS.has(outcome.error.code)) throw outcome.error;
    const moduleArgument = options.agentModule !== undefined ? ` --agent-module ${shellQuote(displayPath(options.agentModule))}` : "";
    return reportOutcome(context, outcome, { agentId: row.agentId, progress, agentModuleArgument: moduleArgument, streamed: false, interrupted: false });
  } finally {
    progress?.stop();
    context.logger.progress = undefined;
    await environment.close();
  }
}
