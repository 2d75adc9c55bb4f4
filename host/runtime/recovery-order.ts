// What a conversation's recovery reads is decided in the core
// (docs/decisions/0062): the host gathers the facts it knows — the open
// scan, the lease, the partition — as `RecoveryFact` bits, the core answers
// `ReadRows(agent, epoch, policy, readQueue)` under a new recovery epoch,
// and the host reports how the recovery ended with that epoch
// (`RecoveryFinished`). Nothing here chooses the rows.

import { EffectKind, RecoveryFact, type RowsPolicy } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import type { LeasingStore } from "./leases.js";

/** The core's answer to `RecoveryRequested`. */
export interface RecoveryOrder {
  readonly epoch: number;
  readonly rows: RowsPolicy;
  readonly readQueue: boolean;
}

/** What the open scan says of one conversation. */
export interface ScanFacts {
  readonly inScan: boolean;
  readonly queuedAtOpen: boolean;
  /** When the scan's read began (`performance.now()`). */
  readonly scanReadAt: number;
}

/** The facts of a first use, as `RecoveryRequested` carries them. With
 * partitions, whether the partition was scanned is the fact, and the
 * lease's epoch is not asked (decision 0030). */
export function recoveryFactsOf(leasing: LeasingStore | undefined, agentId: string, scan: ScanFacts): number {
  let facts = (scan.inScan ? RecoveryFact.InScan : 0) | (scan.queuedAtOpen ? RecoveryFact.QueuedAtOpen : 0);
  if (leasing === undefined) return facts;
  facts |= RecoveryFact.Leasing;
  if (leasing.partitionScanned !== undefined) facts |= leasing.partitionScanned(agentId) ? RecoveryFact.PartitionScanned : 0;
  else if (leasing.leaseOf(agentId)?.epoch === 1) facts |= RecoveryFact.LeaseEpochOne;
  const heldSince = leasing.partitionHeldSince?.(agentId);
  if (heldSince !== undefined && heldSince <= scan.scanReadAt) facts |= RecoveryFact.HeldSinceBeforeScan;
  return facts;
}

/** Reads the `ReadRows` effect the last apply emitted (its first). */
export function recoveryOrderOf(core: ControlCore): RecoveryOrder {
  if (core.effectCount === 0 || core.effectWord(0, 0) !== EffectKind.ReadRows) {
    throw new Error("phronomy core: RecoveryRequested of a registering conversation emitted no ReadRows");
  }
  return { epoch: core.effectWord(0, 2), rows: core.effectWord(0, 3) as RowsPolicy, readQueue: core.effectWord(0, 4) === 1 };
}
