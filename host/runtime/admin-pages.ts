// `env.admin.page()`, `counts()` and the bulk actions (`cancelMany`,
// `retryMany`): executions a page at a time over the whole store, counted
// over the whole store, and a person's cancel or retry of many at once
// (docs/decisions/0082).
//
// Rules kept here:
// * A page is the store's keyset page (`pageExecutions`): statuses that
//   live outside the executions table (`queued`, a message waiting in its
//   queue; `recovery_required`, this process's memory) come as one
//   bounded page without cursors.
// * A bulk action is bounded (`bulkExecutionsMax`) and names its
//   executions: by id, or by a query resolved to the first page that
//   matches it. Each execution goes through the same public path one
//   does (`env.cancel`, `env.retry`), judged as it judges it; one refused
//   does not stop the others, and each answer says what happened to it.

import { InvalidInputError } from "../errors.js";
import { settledWithin } from "../words.js";
import { capabilitiesOf } from "../store/capabilities.js";
import { checkId } from "../store/check-id.js";
import type { ExecutionPage, ExecutionPageQuery, PagingStore } from "../store/execution-pages.js";
import type { ExecutionRow, ExecutionStatusName, OutcomeName } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";
import type { CancelOptions, CancelResult } from "./cancel-by-id.js";
import type { Run } from "./run.js";

/** Which executions `env.admin.page()` lists; every filter narrows. */
export interface AdminPageQuery {
  /** A durable status (`active`, `suspended`, …), an outcome (`completed`,
   * `failed`, …), `queued` or `recovery_required`. */
  readonly status?: ExecutionStatusName | OutcomeName | "recovery_required";
  /** Only this agent's (conversation's). */
  readonly agentId?: string;
  /** Only conversations of the agent definition of this name (`env.agent({ name })`). */
  readonly definition?: string;
  /** Executions whose id starts with this. */
  readonly idPrefix?: string;
  /** Created at or after this time (ms since the epoch). */
  readonly since?: number;
  /** Created before this time (ms since the epoch). */
  readonly until?: number;
  /** Words, each starting a word of the input or the output (all required). */
  readonly text?: string;
  /** A page's `next` or `previous`; absent: the newest. */
  readonly cursor?: string;
  /** Rows at most (default 50, at most 200). */
  readonly limit?: number;
}

/** One page, newest first, and the cursors to its neighbours. */
export type AdminPage = ExecutionPage;

/** Executions one bulk action takes at most: each is a cancel or a retry
 * with its own store reads and writes, and a person confirms the list. */
export const bulkExecutionsMax = 100;

/** How long a bulk action waits for its executions' immediate answers (a
 * cancel that ends them, a refusal) before it returns the rest as requested. */
export const bulkAnswerWaitMs = 1_000;

/** Which executions a bulk action takes: these ids, or the first
 * `bulkExecutionsMax` that match the query (newest first). */
export type BulkSelection = { readonly executionIds: readonly string[] } | { readonly query: AdminPageQuery };

/** What a bulk action did to one execution. */
export interface BulkAnswer {
  readonly executionId: string;
  /** `done`: cancelled, or retrying; `requested`: the cancel is on its way
   * (the execution stops after its work in flight); `refused`: see `error`. */
  readonly status: "done" | "requested" | "refused";
  /** Why it was refused (the error's code and message). */
  readonly error?: { readonly code: string; readonly message: string };
}

/** What the admin pages ask of the environment. */
export interface AdminPagesHost {
  readonly store: ExecutionStore;
  executions(filter: { status?: string; agentId?: string; limit?: number }): Promise<ExecutionRow[]>;
  cancel(executionId: string, options?: CancelOptions): Promise<CancelResult>;
  retry(executionId: string): Run;
}

const outcomeStatuses = new Set<string>(["completed", "failed", "handed_off", "coordination_wait"]);
const pageStatuses = new Set<string>(["preparing", "active", "suspended", "terminal", "queued", "recovery_required", ...outcomeStatuses]);

/** `env.admin.page(query)`. */
export async function adminPage(host: AdminPagesHost, query: AdminPageQuery): Promise<AdminPage> {
  if (typeof query !== "object" || query === null)
    throw new InvalidInputError("env.admin.page(query): the query must be an object", { details: { field: "query" } });
  const { status, ...rest } = query;
  if (status !== undefined && !pageStatuses.has(status)) {
    throw new InvalidInputError(`env.admin.page(query): "status" must be one of ${[...pageStatuses].join(", ")}, got ${JSON.stringify(status)}`, {
      details: { field: "status" },
    });
  }
  if (status === "queued" || status === "recovery_required") return outsideTable(host, status, query);
  const store = pagingStoreOf(host.store);
  const storeQuery: ExecutionPageQuery = {
    ...rest,
    ...(status === undefined ? {} : outcomeStatuses.has(status) ? { outcome: status as OutcomeName } : { status: status as ExecutionStatusName }),
  };
  return store.pageExecutions(storeQuery);
}

/** Queued messages and executions left for recovery: one page, no cursors. */
async function outsideTable(host: AdminPagesHost, status: "queued" | "recovery_required", query: AdminPageQuery): Promise<AdminPage> {
  if (query.cursor !== undefined)
    throw new InvalidInputError(`env.admin.page(query): ${status} executions come in one page; leave "cursor" out`, { details: { field: "cursor" } });
  if (query.text !== undefined)
    throw new InvalidInputError(`env.admin.page(query): ${status} executions are not searched; leave "text" out`, { details: { field: "text" } });
  const rows = await host.executions({ status, ...(query.agentId !== undefined ? { agentId: query.agentId } : {}), limit: query.limit ?? 50 });
  return {
    rows: rows.filter(
      (row) =>
        (query.idPrefix === undefined || row.executionId.startsWith(query.idPrefix))
        && (query.since === undefined || row.createdAt >= query.since)
        && (query.until === undefined || row.createdAt < query.until),
    ),
  };
}

/** The store as one that pages; a store of the application's own that
 * does not is refused with a sentence saying so. */
export function pagingStoreOf(store: ExecutionStore): ExecutionStore & PagingStore {
  if (!capabilitiesOf(store).pages)
    throw new InvalidInputError(`the store ${store.path} does not page or count executions (capability "pages"): use env.admin.executions() on it`);
  return store as ExecutionStore & PagingStore;
}

/** The executions a bulk action takes, checked and bounded. */
export async function bulkTargets(host: AdminPagesHost, selection: BulkSelection, what: string): Promise<string[]> {
  if (typeof selection !== "object" || selection === null)
    throw new InvalidInputError(`${what}: give { executionIds } or { query }`, { details: { field: "selection" } });
  if ("query" in selection) return (await adminPage(host, { ...selection.query, limit: bulkExecutionsMax })).rows.map((row) => row.executionId);
  const ids = (selection as { executionIds?: unknown }).executionIds;
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > bulkExecutionsMax)
    throw new InvalidInputError(`${what}: "executionIds" must be an array of 1 to ${bulkExecutionsMax} execution ids`, { details: { field: "executionIds" } });
  return [...new Set(ids.map((id) => checkId(id, `${what}: executionIds`)))];
}

/** Cancels each; answers once each ended or `bulkAnswerWaitMs` passed. */
export async function cancelMany(host: AdminPagesHost, executionIds: readonly string[], options: CancelOptions): Promise<BulkAnswer[]> {
  return Promise.all(
    executionIds.map(async (executionId) => {
      const cancelled = host.cancel(executionId, options);
      return answerOf(executionId, cancelled, "requested");
    }),
  );
}

/** Retries each; answers once each was refused or `bulkAnswerWaitMs` passed. */
export async function retryMany(host: AdminPagesHost, executionIds: readonly string[]): Promise<BulkAnswer[]> {
  return Promise.all(
    executionIds.map(async (executionId) => {
      let run: Run;
      try {
        run = host.retry(executionId);
      } catch (error) {
        return refused(executionId, error);
      }
      // A retry that runs settles later (maybe failing again): only a refusal at once counts here.
      const refusal = run.result.then(
        () => undefined,
        (error: unknown) => error,
      );
      const settled = await settledWithin(refusal, bulkAnswerWaitMs);
      return settled === undefined || !isRefusal(settled) ? { executionId, status: "done" as const } : refused(executionId, settled);
    }),
  );
}

async function answerOf(executionId: string, promise: Promise<unknown>, pending: "requested"): Promise<BulkAnswer> {
  const marked = promise.then(
    () => ({ ok: true as const }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  const settled = await settledWithin(marked, bulkAnswerWaitMs);
  if (settled === undefined) return { executionId, status: pending };
  return settled.ok ? { executionId, status: "done" } : refused(executionId, settled.error);
}

/** A retry's run rejects with the refusal when the retry was refused (its
 * code names it); a retry that ran and failed again rejects with the
 * execution's own error, which is not a refusal of the retry. */
function isRefusal(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && refusalCodes.has(code);
}

/** Codes of a retry refused before it ran. */
const refusalCodes = new Set(["RETRY_REFUSED", "EXECUTION_NOT_FOUND", "INVALID_INPUT", "RUNTIME_SHUTDOWN", "AGENT_CLOSED", "AGENT_BUSY", "STORE"]);

function refused(executionId: string, error: unknown): BulkAnswer {
  const code = (error as { code?: unknown } | null)?.code;
  return {
    executionId,
    status: "refused",
    error: { code: typeof code === "string" ? code : "INTERNAL", message: error instanceof Error ? error.message : String(error) },
  };
}
