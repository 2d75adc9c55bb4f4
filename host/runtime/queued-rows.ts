// Queued messages as the Environment shows them (docs/decisions/0025):
// `env.executions()` and `env.execution()` read a message still waiting in
// its conversation's queue as a row with status `queued` (its timeline
// starts with a `queued` step), so the CLI and a dashboard list and show it
// like any execution.

import type { ExecutionListFilter, ExecutionRow } from "../store/records.js";
import { queueReaderOf, rowOfQueued } from "../store/queue.js";
import type { ExecutionStore } from "../store/store.js";

/** Rows a listing returns when no limit is given (as the stores do). */
const listDefault = 100;

/** Newest first, queued messages among the executions: `status: "queued"`
 * lists only them; a status or outcome of executions lists none of them. */
export async function listWithQueued(store: ExecutionStore, filter: ExecutionListFilter): Promise<ExecutionRow[]> {
  const reader = queueReaderOf(store);
  const wantsQueued = (filter.status === undefined && filter.outcome === undefined) || filter.status === "queued";
  if (reader === undefined || !wantsQueued) return filter.status === "queued" ? [] : store.listExecutions(filter);
  const limit = filter.limit ?? listDefault;
  const queued = (await reader.listQueuedMessages({ limit, ...(filter.agentId !== undefined ? { agentId: filter.agentId } : {}) })).map(rowOfQueued);
  if (filter.status === "queued") return queued;
  const executions = await store.listExecutions(filter);
  return [...queued, ...executions]
    .sort((a, b) => b.createdAt - a.createdAt || (a.executionId < b.executionId ? 1 : a.executionId > b.executionId ? -1 : 0))
    .slice(0, limit);
}

/** An execution's row, or a queued message's as status `queued`. */
export async function executionOrQueued(store: ExecutionStore, executionId: string): Promise<ExecutionRow | undefined> {
  const row = await store.getExecution(executionId);
  if (row !== undefined) return row;
  const message = await queueReaderOf(store)?.queuedMessage(executionId);
  // Read after the execution: prepared in between, it is an execution now.
  if (message === undefined) return store.getExecution(executionId);
  return rowOfQueued(message);
}
