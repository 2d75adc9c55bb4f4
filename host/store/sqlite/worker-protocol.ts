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

/** A group's settlements as the worker's answer carries them: a JSON array
 * where a success whose value is `{ revision }` alone (each barrier's, and
 * most terminal commits') is that revision, a number, and any other
 * settlement is itself (docs/decisions/0131): the most common answer
 * written, and parsed on the calling thread, without its two objects. */
export function settlementsText(settlements: readonly TransferredSettlement[]): string {
  const sent: unknown[] = new Array<unknown>(settlements.length);
  for (let index = 0; index < settlements.length; index += 1) {
    const settlement = settlements[index]!;
    sent[index] = (settlement.ok ? revisionAlone(settlement.value) : undefined) ?? settlement;
  }
  return JSON.stringify(sent);
}

/** The settlements `settlementsText` wrote, as the JSON of each would have
 * been parsed (a revision alone as `{ ok: true, value: { revision } }`). */
export function settlementsOf(text: string): TransferredSettlement[] {
  const sent = JSON.parse(text) as (TransferredSettlement | number)[];
  for (let index = 0; index < sent.length; index += 1) {
    const settlement = sent[index]!;
    if (typeof settlement === "number") sent[index] = { ok: true, value: { revision: settlement } };
  }
  return sent as TransferredSettlement[];
}

/** The revision of a value whose JSON is `{"revision":<n>}` and parses back
 * to an equal value: a plain object with that one field, a positive safe
 * integer; undefined for anything else. */
function revisionAlone(value: unknown): number | undefined {
  if (typeof value !== "object" || value === null || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  let fields = 0;
  for (const field in value) {
    if (field !== "revision") return undefined;
    fields += 1;
  }
  const revision = (value as { revision?: unknown }).revision;
  return fields === 1 && Object.hasOwn(value, "revision") && typeof revision === "number" && Number.isSafeInteger(revision) && revision > 0
    ? revision
    : undefined;
}

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

/** From the worker: its connection is open (or could not be), a group's
 * settlements in submission order (with `filesChanged` when the store's
 * files were found changed after the commit: then none of them counts), a
 * checkpoint done (`frames` in the log, `copied` of them in the database
 * file; both -1 when it failed, which only delays it to the next one), a
 * sweep done (`more`: another is due; `failure`: why it could not), or
 * its connection is closed. */
export type WorkerReply =
  | { readonly type: "ready" }
  | { readonly type: "failed"; readonly error: TransferredError }
  | { readonly type: "settled"; readonly group: number; readonly settlements: string; readonly filesChanged?: TransferredError }
  | { readonly type: "checkpointed"; readonly frames: number; readonly copied: number }
  | { readonly type: "swept"; readonly group: number; readonly more: boolean; readonly failure?: string }
  | { readonly type: "closed" };
