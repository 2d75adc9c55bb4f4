// The runtime's side of partitions taken over (docs/decisions/0030): when
// the PostgreSQL store takes partitions in the background (a dead or
// stopped process's, or ones a live process gave up to balance), every
// unfinished execution of their conversations is recovered here, as a
// per-agent takeover did (0010). Conversations live here were reported one
// by one (`onLeaseAcquired` → `AgentRecoveries.takeOver`); this recovers the
// others by preparing their conversation, which reads and installs its
// rows (`Conversations.adopt`). Rows of a definition not defined here wait
// for it, as rows found at open do (0024).

import type { ExecutionRow } from "../store/records.js";
import { capabilitiesOf } from "../store/capabilities.js";
import type { ExecutionStore } from "../store/store.js";
import type { Logger } from "./options.js";

interface PartitionGrantView {
  readonly partition: number;
  readonly epoch: number;
}

/** What this needs of a store that owns by partitions. */
export interface PartitionedStore {
  unfinishedExecutionsInPartitions(partitions: readonly number[]): Promise<ExecutionRow[]>;
  markPartitionsScanned(grants: readonly PartitionGrantView[]): void;
  partitionOf(agentId: string): number;
  /** Whether the agent's partition is held here, renewed in time. */
  partitionHeld(agentId: string): boolean;
  /** Whether the agent's partition lapsed here (not renewed in time) and
   * nobody took it since (docs/decisions/0058). */
  partitionLapsedHere(agentId: string): boolean;
  /** Whether the agent's partition is held here at that epoch. */
  partitionHeldAt(agentId: string, epoch: number): boolean;
  /** This process's own lease tick renewing or taking back the agent's
   * partition, if one runs now (docs/decisions/0055). */
  partitionSettling(agentId: string): Promise<void> | undefined;
  queueHeads?(): Promise<readonly { readonly agentId: string; readonly config: unknown }[]>;
}

/** The store as one that owns by partitions, when it declares them. */
export function partitionedStoreOf(store: ExecutionStore): PartitionedStore | undefined {
  return capabilitiesOf(store).partitions ? (store as unknown as PartitionedStore) : undefined;
}

export interface PartitionTakeoverHost {
  readonly logger: Logger;
  /** Recovery runs here (not `recover: false`, not closing). */
  recovers(): boolean;
  /** Prepares (and so recovers) a conversation not live here. */
  adopt(agentId: string, definitionName: string | undefined): Promise<void>;
}

/** What the store's `partitionsAcquired` signal does: recovers them. */
export function partitionTakeovers(store: PartitionedStore, host: PartitionTakeoverHost): (grants: readonly PartitionGrantView[]) => void {
  return (grants) => {
    if (!host.recovers()) return;
    recoverPartitions(store, host, grants).catch((error: unknown) => {
      host.logger.warn(
        `[phronomy] the recovery of partitions ${grants.map((grant) => grant.partition).join(", ")} after their takeover failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
  };
}

async function recoverPartitions(store: PartitionedStore, host: PartitionTakeoverHost, grants: readonly PartitionGrantView[]): Promise<void> {
  const taken = new Set(grants.map((grant) => grant.partition));
  const rows = await store.unfinishedExecutionsInPartitions([...taken]);
  const conversations = new Map<string, string | undefined>();
  for (const row of rows) conversations.set(row.agentId, definitionOf(row.metadata.config));
  // Conversations with messages queued and nothing unfinished: their queue
  // is restored by the same preparation (docs/decisions/0025).
  for (const head of (await store.queueHeads?.()) ?? []) {
    if (taken.has(store.partitionOf(head.agentId)) && !conversations.has(head.agentId)) conversations.set(head.agentId, definitionOf(head.config));
  }
  await Promise.all(
    [...conversations].map(([agentId, name]) =>
      host.adopt(agentId, name).catch((error: unknown) => {
        host.logger.warn(
          `[phronomy] conversation "${agentId}" of a partition taken over could not be recovered: ${error instanceof Error ? error.message : String(error)}`,
        );
      }),
    ),
  );
  store.markPartitionsScanned(grants);
}

function definitionOf(config: unknown): string | undefined {
  const name = (config as { definition?: unknown } | null | undefined)?.definition;
  return typeof name === "string" ? name : undefined;
}
