// What `SqliteStore.open` does before the store object exists: its options
// and path checked, the file judged, ownership taken (`ownership.ts`), the
// calling-thread connection opened and the offload started with its worker
// (`offload.ts`, `start-worker.ts`).
//
// Loaded by the first `SqliteStore.open` (a dynamic import), not by
// importing `phronomy`: these modules and the ones they import (the
// driver, the schema and its migrations, the offload) are most of the
// SQLite store's code, and a PostgreSQL application never runs them
// (docs/decisions/0054). Nothing here runs at import.

import { InvalidInputError } from "../../errors.js";
import { sweepSearchIndex } from "./search-index.js";
import { checkCapacity, inlineAutocheckpointPages, Offload, offloadCapacityDefault, type OffloadPolicy } from "../offload.js";
import type { SqliteConnection } from "./driver.js";
import { readStoreFileIdentity, StoreFileCheck, storeFileReplacedError } from "./file-identity.js";
import { takeOwnership, type StoreOwnership } from "./ownership.js";
import { checkStoreFile, openStoreConnection, type SynchronousMode } from "./schema.js";
import { checkWritable } from "./writable.js";
import { startStoreWorker } from "./start-worker.js";
import { checkPath } from "./store-path.js";
import { commitGroup } from "./transaction.js";

/** What `SqliteStore.open` (and `Phronomy.open` on a file) takes. */
export interface SqliteStoreOptions {
  /** `FULL` (default): a commit survives power loss. `NORMAL`: a commit
   * survives a process crash but the last ones may be lost on power loss;
   * about ten times faster per commit. */
  readonly synchronous?: SynchronousMode;
  /** Operations waiting or in flight before writes are refused with
   * `OffloadFullError` (default `offloadCapacityDefault`). */
  readonly offloadCapacity?: number;
  /** Where commits run (docs/decisions/0006); default `adaptive`. */
  readonly offloadPolicy?: OffloadPolicy;
}

const optionNames: ReadonlySet<string> = new Set(["synchronous", "offloadCapacity", "offloadPolicy"]);
const synchronousModes: ReadonlySet<string> = new Set(["FULL", "NORMAL"]);
const offloadPolicies: ReadonlySet<string> = new Set(["adaptive", "worker", "inline"]);

/** An owned store's parts, for the `SqliteStore` that holds them. */
export interface OwnedStore {
  readonly path: string;
  readonly synchronous: SynchronousMode;
  readonly connection: SqliteConnection;
  readonly offload: Offload;
  readonly ownership: StoreOwnership;
}

/** Checks the options and the path, then takes ownership of the store at
 * `path`, creating or migrating it when needed (`SqliteStore.open` says
 * what is refused). On a failure after the lock was taken, whatever was
 * opened is closed and the lock released. */
export async function openOwned(path: string, options: SqliteStoreOptions): Promise<OwnedStore> {
  checkOptions(options);
  const absolutePath = checkPath(path);
  const synchronous = options.synchronous ?? "FULL";
  // Whatever can be refused is refused before the lock file is created.
  checkStoreFile(absolutePath);
  const ownership = await takeOwnership(absolutePath);
  let connection: SqliteConnection | undefined;
  try {
    const policy = options.offloadPolicy ?? "adaptive";
    // With a worker, the worker checkpoints (docs/decisions/0050); this
    // connection only past a bound, for when the worker is not there.
    const opened = openStoreConnection(absolutePath, { synchronous, ...(policy === "inline" ? {} : { autocheckpointPages: inlineAutocheckpointPages }) });
    connection = opened;
    // Opened while the file refused writes, it would refuse them for good (docs/decisions/0090).
    checkWritable(opened);
    const identity = readStoreFileIdentity(absolutePath);
    const fileCheck = new StoreFileCheck(absolutePath, identity);
    const offload = await Offload.start({
      policy,
      capacity: options.offloadCapacity ?? offloadCapacityDefault,
      path: absolutePath,
      commitInline: (operations) => commitGroup(opened, operations),
      startWorker: () => startStoreWorker({ path: absolutePath, synchronous, identity }),
      sweepInline: () => sweepSearchIndex(opened, Date.now()),
      checkFiles: () => {
        const change = fileCheck.change();
        return change === undefined ? undefined : storeFileReplacedError(absolutePath, change);
      },
    });
    return { path: absolutePath, synchronous, connection: opened, offload, ownership };
  } catch (error) {
    connection?.close();
    ownership.release();
    throw error;
  }
}

function checkOptions(options: SqliteStoreOptions): void {
  for (const key of Object.keys(options)) {
    if (!optionNames.has(key)) throw new InvalidInputError(`unknown SqliteStore option "${key}"; known options: ${[...optionNames].join(", ")}`);
  }
  if (options.synchronous !== undefined && !synchronousModes.has(options.synchronous)) {
    throw new InvalidInputError(`synchronous must be "FULL" or "NORMAL", got ${JSON.stringify(options.synchronous)}`);
  }
  if (options.offloadPolicy !== undefined && !offloadPolicies.has(options.offloadPolicy)) {
    throw new InvalidInputError(`offloadPolicy must be "adaptive", "worker" or "inline", got ${JSON.stringify(options.offloadPolicy)}`);
  }
  if (options.offloadCapacity !== undefined) checkCapacity(options.offloadCapacity);
}
