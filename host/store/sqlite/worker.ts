// The store worker: a `worker_threads` entry that owns one write connection
// to the store and commits each group the offload sends it, in one
// transaction with a savepoint per operation (`commitGroup`). It runs one
// group at a time and answers each with the settlements in order; the
// offload sends the next group only after that answer, so the worker never
// holds a transaction while the calling thread's connection writes.
// It talks over the channel in its `workerData`, never over `parentPort`
// (`worker-protocol.ts` says why).
// It opens only the files the owner opened, and after every transaction
// checks they are still the ones at the store's path (`file-identity.ts`,
// docs/decisions/0021): once they are not, every answer carries the change
// and the offload acknowledges nothing more. Its connection may be opened
// while the store refuses writes (it starts in the background, or replaces
// a worker that died): one SQLite opened read-only then is opened again
// before each group until it can write (`writable.ts`, docs/decisions/0090).

import { isMainThread, receiveMessageOnPort, workerData } from "node:worker_threads";
import { rebuildError, transferError, type TransferredError } from "../error-transfer.js";
import type { SqliteConnection } from "./driver.js";
import { StoreFileCheck, storeFileReplacedError } from "./file-identity.js";
import { openStoreConnection } from "./schema.js";
import { sweepSearchIndex } from "./search-index.js";
import { decodeGroup } from "./step-payloads.js";
import { commitGroup, storeErrorOf } from "./transaction.js";
import { WriteConnection } from "./writable.js";
import type { TransferredSettlement, WorkerData, WorkerReply, WorkerRequest } from "./worker-protocol.js";

if (isMainThread) throw new Error("phronomy: host/store/sqlite/worker runs only as a worker thread");
const { settings, port } = workerData as WorkerData;

function reply(message: WorkerReply): void {
  port.postMessage(message);
}

/** Most operations merged into one transaction from queued groups. */
const mergedOperationsMax = 1024;

function serve(writer: WriteConnection): void {
  // Never reopened once the files changed: it would open another file.
  const connection = (): SqliteConnection => writer.current(() => changedFiles() === undefined);
  port.on("message", (request: WorkerRequest) => {
    if (request.type === "close") return close(writer);
    if (request.type === "checkpoint") return checkpoint(connection());
    if (request.type === "sweep") return sweep(connection, request.group);
    // Group commit across groups: every commit request already waiting is
    // merged into this transaction; each group is answered on its own.
    const groups = [request];
    let operations = request.count;
    let checkpointAfter = false;
    let closeAfter = false;
    // A sweep is answered in its place among the groups: the ones after it wait.
    let sweepAfter: number | undefined;
    while (operations < mergedOperationsMax) {
      const waiting = receiveMessageOnPort(port)?.message as WorkerRequest | undefined;
      if (waiting === undefined) break;
      if (waiting.type === "close") {
        closeAfter = true;
        break;
      }
      if (waiting.type === "checkpoint") {
        checkpointAfter = true;
        continue;
      }
      if (waiting.type === "sweep") {
        sweepAfter = waiting.group;
        break;
      }
      groups.push(waiting);
      operations += waiting.count;
    }
    const settlements = commitGroup(
      connection(),
      groups.flatMap((group) => decodeGroup(group)),
    ).map((settlement): TransferredSettlement => (settlement.ok ? settlement : { ok: false, error: transferError(settlement.error) }));
    const filesChanged = changedFiles();
    let offset = 0;
    for (const group of groups) {
      reply({
        type: "settled",
        group: group.group,
        settlements: JSON.stringify(settlements.slice(offset, offset + group.count)),
        ...(filesChanged ? { filesChanged } : {}),
      });
      offset += group.count;
    }
    if (checkpointAfter) checkpoint(connection());
    if (sweepAfter !== undefined) sweep(connection, sweepAfter);
    if (closeAfter) close(writer);
  });
}

/** Copies the write-ahead log's committed pages into the database file
 * (docs/decisions/0050): this connection never checkpoints inside a commit
 * (`wal_autocheckpoint = 0`), so the offload asks for it here, off the
 * commit path; answered after the groups that arrived before it. Passive:
 * it waits for no reader or writer (the calling thread's connection may
 * commit meanwhile), and copies what no reader still needs. */
function checkpoint(connection: SqliteConnection): void {
  let frames = -1;
  let copied = -1;
  try {
    const row = connection.prepare("PRAGMA wal_checkpoint(PASSIVE)").get();
    frames = Number(row?.["log"] ?? -1);
    copied = Number(row?.["checkpointed"] ?? -1);
  } catch {
    // A checkpoint that fails leaves the log longer until the next one; the
    // commits it would have followed are answered already.
  }
  reply({ type: "checkpointed", frames, copied });
}

/** Indexes the next rows for search (docs/decisions/0095), in a
 * transaction of its own. A failure (a SQLite without FTS5, a busy file) is
 * told, not thrown: the rows stay found by the searches' reading of what is
 * not indexed, and the offload stops asking this worker. */
function sweep(connection: () => SqliteConnection, group: number): void {
  try {
    const { more } = sweepSearchIndex(connection(), Date.now());
    reply({ type: "swept", group, more });
  } catch (error) {
    reply({ type: "swept", group, more: false, failure: error instanceof Error ? error.message : String(error) });
  }
}

/** The change of the store's files since the owner opened them, as an
 * error record; once seen, every later answer carries it too. */
let filesChangedSeen: TransferredError | undefined;
const fileCheck = new StoreFileCheck(settings.path, settings.identity);

function changedFiles(): TransferredError | undefined {
  if (filesChangedSeen !== undefined) return filesChangedSeen;
  const change = fileCheck.change();
  if (change !== undefined) filesChangedSeen = transferError(storeFileReplacedError(settings.path, change));
  return filesChangedSeen;
}

function close(writer: WriteConnection): void {
  writer.close();
  reply({ type: "closed" });
  port.close();
}

try {
  // Never create or migrate a file in place of the one the owner opened (a
  // replacement worker starts after the owner's open, maybe long after).
  const change = changedFiles();
  if (change !== undefined) throw rebuildError(change);
  // The worker checkpoints when asked (`checkpoint`), never inside a commit.
  const writer = new WriteConnection(() => openStoreConnection(settings.path, { synchronous: settings.synchronous, autocheckpointPages: 0, mustExist: true }));
  serve(writer);
  reply({ type: "ready" });
} catch (error) {
  reply({ type: "failed", error: transferError(storeErrorOf(error, settings.path)) });
  port.close();
}
