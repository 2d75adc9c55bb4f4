// A real SQLite store with faults injected on chosen operations: the
// submission refused on the spot (OffloadFull), or the operation's promise
// rejecting (a store failure, or a lost compare-and-set). Everything else
// goes to the real store, so the file shows exactly what was written.

import { ExecutionRehydrationRequiredError, OffloadFullError, StoreError } from "../../host/errors.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";

export type Fault = "refused" | "store_failed" | "lost_race";

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
        const error = plan.fault === "lost_race"
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
