// A real SQLite store with faults injected on chosen operations: the
// submission refused on the spot (OffloadFull, or a lost compare-and-set
// thrown at submission: `refused_lost_race`), or the operation's promise
// rejecting (a store failure, or a lost compare-and-set). Everything else
// goes to the real store, so the file shows exactly what was written.

import { ExecutionRehydrationRequiredError, OffloadFullError, StoreError } from "../../host/errors.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";

export type Fault = "refused" | "refused_lost_race" | "store_failed" | "lost_race";

export interface FaultPlan {
  /** Which operation type fails, and on which occurrence (1-based). */
  readonly operation: StoreOperation["type"];
  readonly occurrence: number;
  readonly fault: Fault;
}

export async function faultyStore(path: string, plan: FaultPlan): Promise<ExecutionStore & { readonly injected: number }> {
  const store = await SqliteStore.open(path);
  let seen = 0;
  let injected = 0;
  const run = <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
    if (operation.type === plan.operation) {
      seen += 1;
      if (seen === plan.occurrence) {
        injected += 1;
        if (plan.fault === "refused") throw new OffloadFullError(0);
        if (plan.fault === "refused_lost_race") throw new ExecutionRehydrationRequiredError(`injected lost race refusing ${operation.type} at submission`);
        const error =
          plan.fault === "lost_race"
            ? new ExecutionRehydrationRequiredError(`injected lost race on ${operation.type}`)
            : new StoreError(`injected store failure on ${operation.type}`);
        return Promise.reject(error);
      }
    }
    return store.run(operation);
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "run") return run;
      if (property === "injected") return injected;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore & { readonly injected: number };
}

/** How a switched-on fault fails an operation:
 * - `nothing_written`: rejected before it runs (SQLite out of disk, or
 *   read-only: its transaction wrote nothing); reads still work.
 * - `outcome_unknown`: run, committed, then reported failed, and from the
 *   first such failure every read fails while the fault lasts (a
 *   PostgreSQL connection lost after its COMMIT was sent, the server then
 *   down: nothing can be read back). */
export type SwitchedFault = "nothing_written" | "outcome_unknown";

const READS = new Set(["getAgent", "getExecution", "listExecutions", "listSteps", "readJournal", "unfinishedExecutions"]);

export interface FaultSwitch {
  /** The operation types that fail while the fault is on. */
  operations: ReadonlySet<StoreOperation["type"]>;
  fault: SwitchedFault;
  on: boolean;
  /** Operations failed so far. */
  injected: number;
}

/** A real SQLite store whose operations of chosen types fail while
 * `faults.on` is set (a fault episode), as `faults.fault` says. */
export async function switchedFaultStore(path: string, faults: FaultSwitch): Promise<ExecutionStore> {
  const store = await SqliteStore.open(path);
  const failure = (what: string): StoreError =>
    new StoreError(
      faults.fault === "nothing_written"
        ? `injected: database or disk is full (SQLITE_FULL) during ${what}`
        : `injected: the connection was lost during ${what} and could not read back whether it committed`,
    );
  const run = async <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
    if (!faults.on || !faults.operations.has(operation.type)) return store.run(operation);
    faults.injected += 1;
    if (faults.fault === "outcome_unknown") await store.run(operation).catch(() => undefined);
    throw failure(operation.type);
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "run") return run;
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (typeof property === "string" && READS.has(property)) {
        return (...args: unknown[]) =>
          faults.on && faults.fault === "outcome_unknown" && faults.injected > 0
            ? Promise.reject(failure(`a read (${property})`))
            : (value as (...parameters: unknown[]) => unknown).apply(target, args);
      }
      return value.bind(target);
    },
  }) as unknown as ExecutionStore;
}
