// `phronomy show <executionId>`: one execution — its state, input, output,
// error, usage, pending approval — and its durable timeline: every barrier,
// model response, tool call with its idempotency key, approval, recovery
// and the terminal, with times (`timeline.ts`) — and its parent and child
// executions (`agentTool()` calls), drawn as a tree (`execution-tree.ts`).

import pc from "../colors.js";
import { shellQuote, type CliContext } from "../context.js";
import { ExitCode, type ExitCodeValue } from "../errors.js";
import { colorState, compactJson, waitKindOf, executionJson, formatDuration, formatTime, printJson, stateOf } from "../format.js";
import { findExecution } from "../lookup.js";
import { describeTimeline, renderTimeline } from "../timeline.js";
import { treeJson, treeLines } from "../execution-tree.js";
import { openStore, resolveStore } from "../store.js";
import { type ExecutionRow, usageSummary } from "../../index.js";

export async function showCommand(context: CliContext, executionArgument: string): Promise<ExitCodeValue> {
  const location = resolveStore(context.options.store, { mustExist: true });
  const environment = await openStore(location, { logger: context.logger, visitBesideOwner: true });
  try {
    const row = await findExecution(environment, location.path, executionArgument);
    const timeline = describeTimeline(await environment.timeline(row.executionId));
    const tree = await environment.executionTree(row.executionId);
    if (context.json) {
      printJson({
        execution: executionJson(row),
        ...(tree !== undefined ? { tree: treeJson(tree) } : {}),
        timeline: timeline.map((entry) => ({ ...entry, at: new Date(entry.at).toISOString() })),
      });
    } else {
      process.stdout.write(`${[...executionLines(context, row), ...(tree !== undefined ? treeLines(tree) : [])].join("\n")}\n\n`);
      process.stdout.write(`${pc.bold(`timeline`)} (${timeline.length} steps)\n${renderTimeline(timeline).join("\n")}\n`);
    }
    return ExitCode.ok;
  } finally {
    await environment.close();
  }
}

export function executionLines(context: CliContext, row: ExecutionRow): string[] {
  const field = (name: string, value: string) => `${pc.dim(name.padEnd(10))}${value}`;
  const lines = [
    field("execution", `${pc.bold(row.executionId)} · agent "${row.agentId}"`),
    field("state", `${colorState(stateOf(row))} · status ${row.status} · phase ${row.phase} · revision ${row.revision}`),
    field("input", compactJson(row.input, 200)),
  ];
  if (row.output !== null) lines.push(field("output", compactJson(row.output, 200)));
  if (row.error) lines.push(field("error", `${pc.red(`[${row.error.code}]`)} ${row.error.message}`));
  lines.push(field("usage", usageSummary(row.usage)));
  lines.push(
    field("started", `${formatTime(row.createdAt)} · last change ${formatTime(row.updatedAt)} (${formatDuration(row.updatedAt - row.createdAt)} later)`),
  );
  if (row.status === "suspended") {
    lines.push(...waitLines(context, row, field));
  } else if (row.status !== "terminal") {
    lines.push(field("recovery", `unfinished: \`phronomy recover${context.storeArgument()} --agent-module <path>\` continues it`));
  }
  return lines;
}

/** The pending wait: its kind, the calls (the question: what the model
 * asked), a typed wait's response schema, and the command that answers it. */
function waitLines(context: CliContext, row: ExecutionRow, field: (name: string, value: string) => string): string[] {
  const request = row.approvalRequest as {
    approvalId?: string;
    toolCalls?: { callId: string; toolName: string; input: unknown }[];
    responseSchema?: unknown;
    key?: string;
    dueAt?: number;
    child?: { executionId: string; agentId?: string };
  } | null;
  const calls = (request?.toolCalls ?? []).map((call) => `${call.toolName}(${compactJson(call.input, 80)}) · call ${call.callId}`);
  const id = request?.approvalId ?? "?";
  const store = context.storeArgument();
  const due = request?.dueAt !== undefined ? [field("", `due ${formatTime(request.dueAt)}: fire it now with phronomy fire ${row.executionId}${store}`)] : [];
  switch (waitKindOf(request)) {
    case "input":
      return [
        field("wait", `${pc.yellow("pending")} input · wait id ${id}`),
        ...calls.map((call) => field("", `asks ${call}`)),
        field("", `answer as ${request?.responseSchema === undefined ? "any JSON" : compactJson(request.responseSchema, 200)}`),
        field("", `answer: phronomy resume ${row.executionId}${store} --value '<json>' [--by <who>] [--agent-module <path>]`),
        ...due,
      ];
    case "event":
      return [
        field("wait", `${pc.yellow("pending")} event · key ${JSON.stringify(request?.key ?? "?")} · wait id ${id}`),
        field("", `send it: phronomy signal ${shellQuote(request?.key ?? "<key>")}${store} --payload '<json>' [--agent-module <path>]`),
        ...due,
      ];
    case "timer":
      return [field("wait", `${pc.yellow("pending")} timer · wait id ${id}`), ...calls.map((call) => field("", call)), ...due];
    case "child":
      return [
        field("wait", `${pc.yellow("pending")} child · wait id ${id}`),
        field("", `its child execution ${request?.child?.executionId ?? "?"} resumes it when it ends: answer the child's own wait`),
      ];
    case "approval":
      return [
        field("approval", `${pc.yellow("pending")} · approval id ${id}`),
        ...calls.map((call) => field("", call)),
        field(
          "",
          `decide: phronomy approve ${row.executionId}${store} [--input '<json>' | --respond '<json>'] [--by <who>] [--agent-module <path>] | phronomy reject …`,
        ),
        ...due,
      ];
  }
}
