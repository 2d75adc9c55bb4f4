// The messages between the offload (calling thread) and the store worker.
// Everything here is structured-clone safe: operations and results are plain
// data, errors travel as `TransferredError` records.
//
// They travel over a `MessageChannel` of their own, handed to the worker in
// its `workerData`, rather than over the worker's `parentPort`: the worker
// drains waiting requests with `receiveMessageOnPort`, which Deno accepts
// only on a `MessagePort` (not on `parentPort`). Node and Bun accept both,
// so one channel serves all three runtimes the same way.

import type { MessagePort } from "node:worker_threads";
import type { TransferredError } from "../error-transfer.js";
import type { StoreFileIdentity } from "./file-identity.js";
import type { SynchronousMode } from "./schema.js";

export interface WorkerSettings {
  readonly path: string;
  readonly synchronous: SynchronousMode;
  /** The store's files as the owner opened them: the worker opens only
   * these, and checks them after every commit (`file-identity.ts`). */
  readonly identity: StoreFileIdentity;
}

/** The worker's `workerData`: its settings and its end of the channel. */
export interface WorkerData {
  readonly settings: WorkerSettings;
  readonly port: MessagePort;
}

export type TransferredSettlement = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: TransferredError };

/** To the worker: commit this group (one transaction), checkpoint the
 * write-ahead log (docs/decisions/0050), sweep the search index (its own
 * transaction, numbered and answered in order as a group: the calling
 * thread's connection writes nothing meanwhile, docs/decisions/0095), or
 * close. */
export type WorkerRequest =
  | {
      readonly type: "commit";
      readonly group: number;
      readonly count: number;
      /** The group's text and its step payloads' texts (`step-payloads.ts`). */
      readonly operations: string;
      readonly payloads: string;
      readonly encoded: string;
    }
  | { readonly type: "checkpoint" }
  | { readonly type: "sweep"; readonly group: number }
  | { readonly type: "close" };

/** From the worker: its connection is open (or could not be), the
 * settlements of a transaction's groups in submission order (with `filesChanged` when the store's
 * files were found changed after the commit: then none of them counts), a
 * checkpoint done (`frames` in the log, `copied` of them in the database
 * file; both -1 when it failed, which only delays it to the next one), a
 * sweep done (`more`: another is due; `failure`: why it could not), or
 * its connection is closed. */
export type WorkerReply =
  | { readonly type: "ready" }
  | { readonly type: "failed"; readonly error: TransferredError }
  | {
      readonly type: "settled";
      /** The first group the transaction held; it held `groups` consecutive ones. */
      readonly group: number;
      readonly groups: number;
      /** Their settlements in order, as JSON text. */
      readonly settlements: string;
      readonly filesChanged?: TransferredError;
    }
  | { readonly type: "checkpointed"; readonly frames: number; readonly copied: number }
  | { readonly type: "swept"; readonly group: number; readonly more: boolean; readonly failure?: string }
  | { readonly type: "closed" };
