// What to do when a write's connection is lost mid-operation (SPEC §4.3,
// issue 7): the operation may or may not have committed — a COMMIT can
// reach the server and succeed while its reply is lost. The outcome is
// never guessed; it is read back:
//
// 1. The lost backend is stopped first (`pg_terminate_backend`, then wait
//    until it has left `pg_stat_activity`). Until that backend is gone its
//    transaction can still commit; once it is gone its outcome is final.
// 2. Every execution write appends steps, and its last step carries the
//    operation's `writeId` (a random UUID per call). That step exists if and
//    only if the write committed. Found: the operation's result is rebuilt
//    (a compare-and-set always commits `expectedRevision + 1`; a prepare's
//    result follows from the operation). Not found: it did not commit, and the
//    caller gets `StoreError` with `details.outcome = "not_committed"` —
//    retrying it is safe, the compare-and-set refuses a duplicate.
// 3. The agent lifecycle (ensure, close, purge) is idempotent: it is run
//    again on a fresh connection (a purge repeated after a committed first
//    attempt reports `purged: false`).
// 4. If the database cannot be reached to find out, `StoreError` with
//    `details.outcome = "unknown"`: recovery after restart reads the row.

import type pg from "pg";
import { StoreError } from "../../errors.js";
import type { OffloadOperation } from "../offload-operation.js";
import { preparedValue } from "./statements.js";
import { committedQueueWrite } from "./queue.js";

/** How long resolution waits for the lost backend to exit: a terminated
 * backend exits within milliseconds unless it is inside an fsync. */
export const lostBackendWaitMs = 5_000;
const lostBackendPollMs = 20;

/** SQLSTATE classes that mean the session is gone, not the statement refused. */
export function isConnectionLoss(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) {
    return code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03";
  }
  // No SQLSTATE: a socket error (ECONNRESET, EPIPE) or pg's "Connection
  // terminated unexpectedly" / "Client has encountered a connection error".
  return error instanceof Error && !("severity" in error);
}

export type Resolution = { readonly committed: true; readonly value: unknown } | { readonly committed: false } | { readonly committed: "rerun" };

/** Stops the lost backend and reads whether the write committed. */
export async function resolveOutcome(
  client: pg.ClientBase,
  operation: OffloadOperation,
  writeId: string,
  lostBackendPid: number | undefined,
): Promise<Resolution> {
  if (lostBackendPid !== undefined) await stopBackend(client, lostBackendPid);
  // A prune is idempotent too: run again, it deletes what is still old enough.
  if (operation.type === "ensureAgent" || operation.type === "closeAgent" || operation.type === "purgeAgent" || operation.type === "pruneExecutions")
    return { committed: "rerun" };
  const found = await client.query("SELECT 1 FROM steps WHERE execution_id = $1 AND write_id = $2", [operation.executionId, writeId]);
  if (found.rowCount === 0) return { committed: false };
  if (operation.type === "prepareExecution") return { committed: true, value: preparedValue(operation) };
  if (operation.type === "enqueueMessage" || operation.type === "cancelQueued") return { committed: true, value: await committedQueueWrite(client, operation) };
  return { committed: true, value: { revision: operation.expectedRevision + 1 } };
}

async function stopBackend(client: pg.ClientBase, pid: number): Promise<void> {
  await client.query("SELECT pg_terminate_backend($1)", [pid]);
  const deadline = Date.now() + lostBackendWaitMs;
  while (Date.now() < deadline) {
    const alive = await client.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid]);
    if (alive.rowCount === 0) return;
    await new Promise((resolve) => setTimeout(resolve, lostBackendPollMs));
  }
  throw new StoreError(
    `the lost database session (backend pid ${pid}) did not end within ${lostBackendWaitMs} ms; the outcome of its write cannot be read yet`,
    { details: { outcome: "unknown" } },
  );
}
