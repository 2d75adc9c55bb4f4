// Who runs a conversation's executions (docs/decisions/0030, 0031, 0055):
// this process takes an agent's lease on first use, and an execution whose
// agent another process holds is followed, filed or refused. (A start
// waits for the lease to settle here and for a takeover's recovery as the
// core says: `AgentRecoveries.settleLease`, `readiness-waiters.ts`.) Without
// a leasing store this process owns every agent it defines (a SQLite
// visitor none).

import type { ExecutionStore } from "../store/store.js";
import type { AgentRecoveries } from "./agent-recoveries.js";
import type { Conversations } from "./conversations.js";
import type { Coordinator } from "./coordinator.js";
import { leasingStoreOf, type LeasingStore } from "./leases.js";

/** What ownership asks of its environment (environment.ts wires it). */
export interface AgentOwnershipHost {
  readonly store: ExecutionStore;
  readonly coordinator: Coordinator;
  readonly conversations: Pick<Conversations, "liveEntry">;
  readonly recoveries: Pick<AgentRecoveries, "recoverAfterRetake">;
  readonly visitor: boolean;
  /** Starts this process may not run are filed for their owner (docs/decisions/0031). */
  filesForOwner(): boolean;
}

export class AgentOwnership {
  constructor(private readonly host: AgentOwnershipHost) {}

  /** With a leasing store: takes the agent's lease and says when (the
   * rows recovery reads must be read after it), or false when another live
   * process owns it — its starts are refused here, and the store keeps
   * trying; `takeOver` recovers it once taken. Without one: undefined. */
  async ownAgent(agentId: string): Promise<number | false | undefined> {
    const leasing: LeasingStore | undefined = leasingStoreOf(this.host.store);
    if (!leasing) return undefined;
    const acquisition = await leasing.acquireLease(agentId);
    if (acquisition.acquired) {
      // Taken back on demand: the store reports no takeover for the agent
      // whose start took it, so what a fencing refusal left held here while
      // it was lost is recovered now.
      void this.host.conversations.liveEntry(agentId)?.then(
        (entry) => {
          if (this.host.coordinator.recoveryRequiredEntriesOf(entry).length > 0) this.host.recoveries.recoverAfterRetake(agentId, acquisition.epoch);
        },
        () => undefined,
      );
      return performance.now();
    }
    const { logger } = this.host.coordinator.settings;
    // Filed for that process (docs/decisions/0031): nothing to warn about.
    if (this.host.filesForOwner())
      logger.debug?.(
        `[phronomy] agent "${agentId}" is owned by ${acquisition.owner} until ${new Date(acquisition.expiresAt).toISOString()}: its starts are filed for that process`,
      );
    else
      logger.warn(
        `[phronomy] agent "${agentId}" is owned by ${acquisition.owner} until ${new Date(acquisition.expiresAt).toISOString()}: its starts are refused here (AGENT_BUSY); this process takes it over, and recovers it, if that lease expires`,
      );
    return false;
  }

  /** The process holding the agent's lease, if any (undefined without leases). */
  leaseHolder(agentId: string): Promise<{ readonly owner: string; readonly expiresAt: number } | undefined> {
    return leasingStoreOf(this.host.store)?.leaseHolder(agentId) ?? Promise.resolve(undefined);
  }

  /** Whether the agent's lease (PostgreSQL) is held elsewhere or by nobody:
   * false without leases. */
  notHeldHere(agentId: string): boolean {
    const leasing = leasingStoreOf(this.host.store);
    return leasing !== undefined && leasing.leaseOf(agentId) === undefined;
  }

  /** An execution of this agent is run by another process: this is a
   * visitor, or the agent's lease (PostgreSQL) is not held here. */
  runsElsewhere(agentId: string): boolean {
    return this.host.visitor || this.notHeldHere(agentId);
  }
}
