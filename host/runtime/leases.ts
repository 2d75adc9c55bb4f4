// The runtime's side of agent leases (issue 7, docs/decisions/0010): a store
// that can lease agents (the PostgreSQL store) is asked for an agent's lease
// when the agent is defined, before its recovery runs, so only the owner
// recovers it; when the store takes an agent over later (the former owner's
// lease expired), the environment recovers it then. Stores without leases
// (SQLite: one owner per file, docs/decisions/0007) are left as they are.

import type { PhronomyError } from "../errors.js";
import { capabilitiesOf } from "../store/capabilities.js";
import type { ExecutionStore } from "../store/store.js";
import type { ExecutionRow } from "../store/records.js";

export interface LeaseAcquisitionView {
  readonly acquired: boolean;
  readonly owner: string;
  readonly epoch: number;
  readonly expiresAt: number;
}

/** What the environment needs of a store that leases agents. */
export interface LeasingStore {
  /** `fromView`: a start that can be filed for the holder asks — another
   * live holder seen by the store's last look at the leases is answered
   * without a statement (docs/decisions/0068); a store that has no such
   * view ignores it. */
  acquireLease(agentId: string, options?: { readonly fromView?: boolean }): Promise<LeaseAcquisitionView>;
  leaseOf(agentId: string): { readonly owner: string; readonly epoch: number } | undefined;
  /** Who holds the agent's lease now, and until when (read from the
   * store); undefined when nobody does. */
  leaseHolder(agentId: string): Promise<{ readonly owner: string; readonly expiresAt: number } | undefined>;
  /** The epoch the agent's lease (or its partition) is held at here,
   * renewed in time or not — its admission window may have lapsed until
   * the next renewal — undefined when not held (docs/decisions/0058). */
  heldEpochOf(agentId: string): number | undefined;
  /** Gives the agent's lease up (an idle conversation let go). */
  releaseLease(agentId: string): Promise<void>;
  /** The refusal the store's own lease check gives a start of the agent
   * now (AGENT_BUSY, lease_not_held, the owner named), if it gives one: a
   * start the core refused as owned elsewhere is told it
   * (`AdmissionVerdict.RefuseOwnedElsewhere`). */
  admissionRefusal?(agentId: string): PhronomyError | undefined;
  /** The agent's unfinished executions, read now (after its lease was taken). */
  unfinishedExecutionsOf(agentId: string): Promise<ExecutionRow[]>;
  /** With partitions (docs/decisions/0030): the agent's partition is held
   * and its unfinished rows were read already. */
  partitionScanned?(agentId: string): boolean;
  /** With partitions: when the agent's partition was taken at the epoch
   * held now (`performance.now()`, the take committed), held ever since;
   * undefined when not held. */
  partitionHeldSince?(agentId: string): number | undefined;
}

/** The store as a leasing store, when it declares leases. */
export function leasingStoreOf(store: ExecutionStore): LeasingStore | undefined {
  return capabilitiesOf(store).leases ? (store as unknown as LeasingStore) : undefined;
}

/** The epoch the agent's partition (or lease) is held at here, renewed in
 * time or not; undefined when not held, or the store does not lease. */
export function heldEpochOf(store: ExecutionStore, agentId: string): number | undefined {
  return leasingStoreOf(store)?.heldEpochOf(agentId);
}
