// What the CLI does with executions that recovery found before it runs
// anything new for an agent: one agent runs one execution at a time, so a
// recovered execution that continues must finish first, and one waiting
// (for approval, a value, an event, a timer or a child; or one recovery could
// not continue) keeps the agent busy until it is answered (or looked at).
//
// Waiting is done by polling the durable row: a continued execution may
// end, or suspend for approval again — and a suspension does not settle a
// waiter (`env.wait` stays pending until the execution really ends).

import { setTimeout as sleep } from "node:timers/promises";
import { PhronomyError, waitingWords, waitKindOf, type ApprovalRequest, type Environment, type ExecutionRow, type RecoveredExecution } from "../index.js";
import type { CliContext } from "./context.js";
import { CliError } from "./errors.js";
import { stateOf } from "./format.js";
import { answerCommand } from "./outcome.js";

/** How often a recovered execution's row is read while the CLI waits for it. */
export const settlePollIntervalMs = 50;

/** Waits until the execution is terminal or suspended; returns its row.
 * A fired `signal` (Ctrl-C) stops the wait, not the execution. */
export async function waitUntilSettled(environment: Environment, executionId: string, signal?: AbortSignal): Promise<ExecutionRow> {
  for (;;) {
    const row = await environment.execution(executionId);
    if (row === undefined) throw new PhronomyError("INTERNAL", `execution ${executionId} vanished from the store while the CLI waited for it`, { executionId });
    if (row.status === "terminal" || row.status === "suspended") return row;
    if (signal?.aborted) {
      throw new CliError(
        "INTERRUPTED",
        `interrupted while execution ${executionId} was being recovered; it is still unfinished, and the next run of its agent (or \`phronomy recover\`) goes on with it`,
      );
    }
    await sleep(settlePollIntervalMs);
  }
}

/** Lets the agent's recovered executions finish and refuses to go on while
 * one still holds the agent (waiting, or needing attention). */
export async function clearRecovered(
  context: CliContext,
  environment: Environment,
  agentId: string,
  argumentsAfter: string,
  signal?: AbortSignal,
): Promise<RecoveredExecution[]> {
  const report = await environment.recovery(agentId);
  for (const item of report) {
    if (item.status === "continued") {
      context.logger.line(
        `recovering execution ${item.executionId}, left unfinished by an earlier process (phase ${item.phase}, continuation ${item.continuation ?? "?"})…`,
      );
      const row = await waitUntilSettled(environment, item.executionId, signal);
      context.logger.line(`recovered execution ${item.executionId}: ${stateOf(row)}${row.error ? ` [${row.error.code}]` : ""}`);
      if (row.status === "suspended") throw busyWaiting(agentId, row, argumentsAfter);
    } else if (item.status === "suspended") {
      throw busyWaiting(agentId, await environment.execution(item.executionId), argumentsAfter);
    } else if (item.status === "needs_attention") {
      throw new PhronomyError(
        "EXECUTION_REHYDRATION_REQUIRED",
        `agent "${agentId}" holds execution ${item.executionId} (phase ${item.phase}), which recovery could not continue: ${item.reason ?? "no reason given"}; inspect it with \`phronomy show ${item.executionId}\``,
        { agentId, executionId: item.executionId },
      );
    }
  }
  return report;
}

/** AGENT_BUSY naming what the execution waits for and the command that
 * answers it (a person's approval, a value, an event, a timer, a child). */
function busyWaiting(agentId: string, row: ExecutionRow | undefined, argumentsAfter: string): PhronomyError {
  const executionId = row?.executionId ?? "";
  const request = { ...(row?.approvalRequest as object | null), executionId } as ApprovalRequest;
  const kind = waitKindOf(row?.approvalRequest);
  const answer =
    kind === "approval"
      ? `decide it first: phronomy approve ${executionId}${argumentsAfter} (or phronomy reject)`
      : `answer it first: ${answerCommand(request, argumentsAfter)}`;
  return new PhronomyError(
    "AGENT_BUSY",
    `agent "${agentId}" has execution ${executionId} ${waitingWords(kind)}, and an agent runs one execution at a time: ${answer}`,
    { agentId, executionId, details: { waitKind: kind } },
  );
}
