// The store worker: a `worker_threads` entry that owns one write connection
// to the store and commits each group the offload sends it, in one
// transaction with a savepoint per operation (`commitGroup`). It runs one
// group at a time and answers each with the settlements in order; the
// offload sends the next group only after that answer, so the worker never
// holds a transaction while the calling thread's connection writes.

import { parentPort, workerData } from "node:worker_threads";
import { transferError } from "../error-transfer.js";
import type { SqliteConnection } from "./driver.js";
import { openStoreConnection } from "./schema.js";
import { commitGroup, storeErrorOf } from "./transaction.js";
import type { TransferredSettlement, WorkerReply, WorkerRequest, WorkerSettings } from "./worker-protocol.js";

if (parentPort === null) throw new Error("phronomy: host/store/sqlite/worker runs only as a worker thread");
const port = parentPort;
const settings = workerData as WorkerSettings;

function reply(message: WorkerReply): void {
  port.postMessage(message);
}

function serve(connection: SqliteConnection): void {
  port.on("message", (request: WorkerRequest) => {
    if (request.type === "close") {
      connection.close();
      reply({ type: "closed" });
      port.close();
      return;
    }
    const settlements = commitGroup(connection, request.operations).map((settlement): TransferredSettlement =>
      settlement.ok ? settlement : { ok: false, error: transferError(settlement.error) });
    reply({ type: "settled", group: request.group, settlements });
  });
}

try {
  const connection = openStoreConnection(settings.path, { synchronous: settings.synchronous });
  serve(connection);
  reply({ type: "ready" });
} catch (error) {
  reply({ type: "failed", error: transferError(storeErrorOf(error, settings.path)) });
  port.close();
}
