// `phronomy cancel <executionId> [--reason <text>]`: cancel an execution by
// id (docs/decisions/0026) through the public API, `env.cancel`, and print
// how it ended. Beside a live owner of a SQLite store the command is a
// visitor (docs/decisions/0015): the cancel is filed in the store's inbox,
// the owner cancels the execution (work in flight finishes first) and the
// command prints the outcome. On PostgreSQL the process holding the
// agent's lease applies it the same way. An unfinished execution nothing
// runs (its process died) is cancelled here at once. No agent module is
// needed: nothing of the agent runs.

import pc from "../colors.js";
import type { CancelResult } from "../../index.js";
import type { CliContext } from "../context.js";
import { ExitCode, type ExitCodeValue } from "../errors.js";
import { printJson, stateOf } from "../format.js";
import { findExecution } from "../lookup.js";
import { openStore, resolveStore } from "../store.js";

export interface CancelCommandOptions {
  readonly reason?: string;
}

export async function cancelCommand(context: CliContext, executionArgument: string, options: CancelCommandOptions): Promise<ExitCodeValue> {
  const location = resolveStore(context.options.store, { mustExist: true });
  const environment = await openStore(location, { logger: context.logger, visitBesideOwner: true, recover: false });
  try {
    const row = await findExecution(environment, location.path, executionArgument);
    const executionId = row.executionId;
    if (row.status !== "terminal") {
      const where = environment.visitor ? "; the store's owner cancels it and this command waits for the outcome" : "";
      context.say(`cancelling execution ${executionId} of agent "${row.agentId}" (${stateOf(row)})${where}`);
    }
    const result = await environment.cancel(executionId, options.reason !== undefined ? { reason: options.reason } : {});
    report(context, result);
    return ExitCode.ok;
  } finally {
    await environment.close();
  }
}

function report(context: CliContext, result: CancelResult): void {
  if (context.json) {
    printJson(result);
    return;
  }
  if (result.outcome === "cancelled") {
    context.say(`${pc.yellow("cancelled")} execution ${result.executionId} of agent "${result.agentId}"${result.error ? `: ${result.error.message}` : ""}`);
    context.say(pc.dim(`\`phronomy retry ${result.executionId}\` continues it from its last durable step`));
    return;
  }
  context.say(
    `execution ${result.executionId} ended ${result.outcome} before the cancel took effect${result.error ? ` (${result.error.code}: ${result.error.message})` : ""}`,
  );
}
