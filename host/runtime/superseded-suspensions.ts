// Suspensions held here that another process moved on (docs/decisions/0063).
// A process whose conversation's lease moved away keeps its executions'
// entries as they were (lost-leases.ts): one suspended here stays
// suspended, holding the conversation's admission. The process that held
// the conversation next may have applied its decision and run it on; when
// the lease comes back here, the recovery reads the row at a later revision
// (or terminal). The core decides from that revision whether the
// suspension here is stale (`DischargeRecovery` with the row's revision);
// released, the row is installed again like any other, and the callers
// waiting here follow the execution from the store.

import { MessageKind as M, ResultCode } from "../../assembly/abi.js";
import type { ExecutionRow } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";
import type { ControlLoop } from "./control-loop.js";
import type { Coordinator } from "./coordinator.js";
import type { AgentEntry, ExecutionEntry } from "./requests.js";
import type { Waiting } from "./run.js";

/** What the release reaches (agent-recoveries.ts passes its host). */
export interface SupersededHost {
  readonly store: ExecutionStore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  /** The follower of executions run elsewhere (durable-watch.ts). */
  follow(agentId: string, executionId: string, waiter: Waiting): void;
}

/** Releases the agent's executions suspended here whose durable row —
 * among `unfinished`, else read now — is at a later revision than the
 * suspension here. Their rows, if unfinished, are then installed by the
 * recovery as executions not live here. */
export async function releaseSupersededSuspensions(host: SupersededHost, agent: AgentEntry, unfinished: readonly ExecutionRow[]): Promise<void> {
  const byId = new Map(unfinished.map((row) => [row.executionId, row]));
  // One let go of here is compared by the revision the core holds, and
  // rebuilt only if its row moved on.
  const dormant = host.coordinator.dormantOf(agent);
  if (dormant !== undefined) {
    const row = byId.get(dormant.executionId) ?? (await host.store.getExecution(dormant.executionId));
    const revision = host.coordinator.settings.core.executionIdentity(dormant.slot)?.revision;
    if (row === undefined || (row.status === "suspended" && row.revision === revision)) return;
  }
  for (const live of host.coordinator.liveEntriesOf(agent)) {
    if (!live.suspended || host.coordinator.heldForRecovery(live)) continue;
    const row = byId.get(live.executionId) ?? (await host.store.getExecution(live.executionId));
    if (row !== undefined && !sameSuspension(host.coordinator, live, row)) await discharge(host, live, row);
  }
}

/** The row still shows the suspension held here (its approval pending; for
 * one let go of and not read back yet, the revision the core holds):
 * nothing to ask the core. */
function sameSuspension(coordinator: Coordinator, live: ExecutionEntry, row: ExecutionRow): boolean {
  if (live.bare) return row.status === "suspended" && row.revision === coordinator.settings.core.executionIdentity(live.slot)?.revision;
  const pending = row.approvalRequest as { readonly approvalId?: unknown } | null;
  return row.status === "suspended" && pending?.approvalId === live.approvalRequest?.approvalId;
}

/** On the loop: the core decides; released, its callers follow the row. */
function discharge(host: SupersededHost, live: ExecutionEntry, row: ExecutionRow): Promise<void> {
  return new Promise((resolve, reject) => {
    host.loop.post(
      () => {
        if (host.coordinator.entryById(live.executionId) !== live || !live.suspended) return resolve();
        // Taken first: a released execution's waiters would be told
        // EXECUTION_REHYDRATION_REQUIRED, yet it runs on from its row.
        const waiters = live.waiters.splice(0);
        let code: number = ResultCode.NotQuiescent;
        try {
          code = host.coordinator.apply(M.DischargeRecovery, live.slot, live.generation, row.revision);
        } finally {
          // Refused (or the core failed): they wait here as before.
          if (code !== ResultCode.Ok) live.waiters.push(...waiters);
          else for (const waiter of waiters) host.follow(row.agentId, row.executionId, waiter);
        }
        resolve();
      },
      { completion: { fail: reject }, label: `the release of execution ${live.executionId}, suspended here and moved on elsewhere` },
    );
  });
}
