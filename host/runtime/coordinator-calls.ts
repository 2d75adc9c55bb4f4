// What the steps the coordinator hands work to (cancel-commit.ts,
// recovery.ts, retry.ts) call back on it: its tables, its settings, and
// the two ways into the core. Declared here, below them and the
// coordinator, so that they need not import coordinator.ts, which imports
// them (test/architecture/import-graph.test.ts); `Coordinator` satisfies it.

import type { ControlCore } from "../core/control-core.js";
import type { ExecutionStore } from "../store/store.js";
import type { DeliverySettings } from "./delivery.js";
import type { ExecutionEntry, RequestTable } from "./requests.js";

/** The coordinator's settings these steps read. */
export interface CoordinatorCallSettings extends DeliverySettings {
  readonly store: ExecutionStore;
  readonly now: () => number;
  /** The core's pure queries a step asks (a replacing start's verdicts). */
  readonly core: Pick<ControlCore, "replaceVerdicts">;
}

/** The coordinator, as cancel commits, recoveries and retries use it. */
export interface CoordinatorCalls {
  readonly requests: RequestTable;
  readonly settings: CoordinatorCallSettings;
  /** Applies one message to the core now (on the control loop). */
  apply(kind: number, a?: number, b?: number, c?: number, d?: number, e?: number, f?: number, g?: number): number;
  /** Posts a message to the control loop (applied later, in order). */
  post(message: () => void): void;
  entryById(executionId: string): ExecutionEntry | undefined;
  /** Whether the execution is live here, without rebuilding one let go of. */
  hasExecution(executionId: string): boolean;
  entryAt(slot: number): ExecutionEntry | undefined;
  /** A decision or cancel committed on a suspended execution was not
   * written: it is suspended here again, as if the suspension landed now
   * — a lease lost meanwhile hands the callers that joined it since the
   * last report (a cancel that waited for the decision) on (decision 0063). */
  suspensionKept(entry: ExecutionEntry): void;
}
