// `phronomy ls [--status …] [--agent …] [--definition …] [--search words]
// [--limit n]`: the store's executions, newest first, as a table (or
// `--json`). `--status` takes a durable status (preparing, active,
// suspended, terminal, queued) or a terminal outcome (completed, failed,
// handed_off, coordination_wait); `--search` and `--definition` (the
// conversations of one named agent, docs/decisions/0089) read through
// `env.admin.page` (docs/decisions/0082), a page of 200 at a time.

import type { CliContext } from "../context.js";
import { CliError, ExitCode, type ExitCodeValue } from "../errors.js";
import { colorState, compactJson, executionJson, formatDuration, formatTime, printJson, stateOf, table } from "../format.js";
import { openStore, resolveStore } from "../store.js";
import type { ExecutionRow } from "../../index.js";

export const LIST_STATUSES = ["preparing", "active", "suspended", "terminal", "queued"] as const;
export const LIST_OUTCOMES = ["completed", "failed", "handed_off", "coordination_wait"] as const;

/** Rows `ls` shows by default; the store reads at most 1,000 at once. */
export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 1_000;
/** Characters of an execution's input shown in the table. */
const inputShownMax = 48;

export interface ListOptions {
  readonly status?: string;
  readonly agent?: string;
  readonly definition?: string;
  readonly limit?: number;
  readonly search?: string;
}

/** Rows a search shows at most: one page of `env.admin.page`. */
export const SEARCH_LIMIT_MAX = 200;

export async function lsCommand(context: CliContext, options: ListOptions): Promise<ExitCodeValue> {
  const limit = options.limit ?? LIST_LIMIT_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX) throw new CliError("USAGE", `--limit must be an integer from 1 to ${LIST_LIMIT_MAX}`);
  if (options.search !== undefined && limit > SEARCH_LIMIT_MAX) throw new CliError("USAGE", `--limit must be at most ${SEARCH_LIMIT_MAX} with --search`);
  const location = resolveStore(context.options.store, { mustExist: true });
  const environment = await openStore(location, { logger: context.logger, visitBesideOwner: true });
  let rows: ExecutionRow[];
  try {
    rows = await listed(environment, options, limit);
  } finally {
    await environment.close();
  }
  if (context.json) {
    printJson({ store: location.path, executions: rows.map(executionJson) });
    return ExitCode.ok;
  }
  if (rows.length === 0) {
    process.stdout.write(`no executions${filterText(options)} in the store at ${location.path}\n`);
    return ExitCode.ok;
  }
  process.stdout.write(
    `${table(
      ["execution", "agent", "state", "started", "took", "tokens", "input"],
      rows.map((row) => [
        row.executionId,
        row.agentId,
        colorState(stateOf(row)) + (row.error ? ` [${row.error.code}]` : ""),
        formatTime(row.createdAt),
        formatDuration(row.updatedAt - row.createdAt),
        String(row.usage.totalTokens),
        compactJson(row.input, inputShownMax),
      ]),
    )}\n`,
  );
  process.stdout.write(
    `${rows.length} execution${rows.length === 1 ? "" : "s"}${filterText(options)}${rows.length === limit ? ` (the newest ${limit}: --limit shows more)` : ""}\n`,
  );
  return ExitCode.ok;
}

async function listed(environment: Awaited<ReturnType<typeof openStore>>, options: ListOptions, limit: number): Promise<ExecutionRow[]> {
  const agentId = options.agent;
  const status = options.status;
  if (options.search !== undefined || options.definition !== undefined) return paged(environment, options, limit);
  if (status === undefined || (LIST_STATUSES as readonly string[]).includes(status)) {
    return environment.executions({ limit, ...(agentId ? { agentId } : {}), ...(status ? { status: status as (typeof LIST_STATUSES)[number] } : {}) });
  }
  // An outcome (validated by the command line): the store filters on it.
  return environment.executions({ limit, status: "terminal", outcome: status as (typeof LIST_OUTCOMES)[number], ...(agentId ? { agentId } : {}) });
}

/** Through `env.admin.page`, following its cursor until `limit` rows. */
async function paged(environment: Awaited<ReturnType<typeof openStore>>, options: ListOptions, limit: number): Promise<ExecutionRow[]> {
  const { agent: agentId, status, search: text, definition } = options;
  const rows: ExecutionRow[] = [];
  let cursor: string | undefined;
  do {
    const page = await environment.admin.page({
      limit: Math.min(SEARCH_LIMIT_MAX, limit - rows.length),
      ...(text !== undefined ? { text } : {}),
      ...(definition !== undefined ? { definition } : {}),
      ...(agentId ? { agentId } : {}),
      ...(status ? { status: status as (typeof LIST_STATUSES)[number] | (typeof LIST_OUTCOMES)[number] } : {}),
      ...(cursor !== undefined ? { cursor } : {}),
    });
    rows.push(...page.rows);
    cursor = page.next;
  } while (cursor !== undefined && rows.length < limit);
  return rows;
}

function filterText(options: ListOptions): string {
  const parts: string[] = [];
  if (options.status) parts.push(`status ${options.status}`);
  if (options.agent) parts.push(`agent "${options.agent}"`);
  if (options.definition) parts.push(`definition "${options.definition}"`);
  if (options.search) parts.push(`matching "${options.search}"`);
  return parts.length > 0 ? ` (${parts.join(", ")})` : "";
}
