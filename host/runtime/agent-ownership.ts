// Who runs a conversation's executions (docs/decisions/0030, 0031, 0055):
// this process takes an agent's lease on first use, and an execution whose
// agent another process holds is followed, filed or refused — where, the
// core decides (`Admit` for a conversation here, `byIdVerdict` for an
// operation by id with none, by-id-placement.ts). (A start waits for the
// lease to settle here and for a takeover's recovery as the core says:
// `AgentRecoveries.settleLease`, `readiness-waiters.ts`.) Without a
// leasing store this process owns every agent it defines (a SQLite
// visitor none).

import { RecoveryCause } from "../../assembly/abi.js";
import type { ExecutionStore } from "../store/store.js";
import type { AgentRecoveries } from "./agent-recoveries.js";
import type { Conversations } from "./conversations.js";
import type { ControlLoop } from "./control-loop.js";
import type { Coordinator } from "./coordinator.js";
import { leasingStoreOf, type LeasingStore } from "./leases.js";
import { postRetaken } from "./retakes.js";

/** What ownership asks of its environment (environment.ts wires it). */
export interface AgentOwnershipHost {
  readonly store: ExecutionStore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  readonly conversations: Pick<Conversations, "liveEntry">;
  readonly recoveries: Pick<AgentRecoveries, "recoverAfterRetake">;
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
    // A process that files starts for their owner takes the store's view
    // of a live holder for an answer (docs/decisions/0068): the start is
    // filed without a take or a read of the holder.
    const acquisition = await leasing.acquireLease(agentId, { fromView: this.host.filesForOwner() });
    if (acquisition.acquired) {
      // Taken back on demand: the store reports no takeover for the agent
      // whose start took it; the core says whether what a fencing refusal
      // left held here while it was lost is to be recovered now (retakes.ts).
      postRetaken(this.host, agentId, acquisition.epoch, RecoveryCause.Retake, this.host.recoveries.recoverAfterRetake);
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
}
