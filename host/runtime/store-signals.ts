// Where a store's signals go in the runtime (host/store/capabilities.ts):
// the one object `Phronomy.open` hands the store (`store.listen`). Each
// signal is routed to the part of the environment that acts on it; none
// throws back into the store's timers and connections.

import type { StoreSignals } from "../store/capabilities.js";
import type { InboxApplier } from "./approval-inbox.js";
import type { Logger } from "./options.js";
import type { RemoteStarts } from "./remote-start.js";

/** The parts of an environment the signals reach. */
export interface SignalTargets {
  readonly logger: Logger;
  /** Where the store lives, for the log. */
  readonly storePath: string;
  /** A conversation's lease taken over in the background: recover it. */
  takeOver(agentId: string, epoch: number): void;
  /** Partitions taken in the background: recover their conversations
   * (undefined: the store has no partitions). */
  readonly partitionsTaken: ((grants: readonly { readonly partition: number; readonly epoch: number }[]) => void) | undefined;
  /** Conversations whose lease moved away: their callers waiting here
   * follow their executions wherever those run next. */
  leasesLost(agentIds: readonly string[]): void;
  inboxApplier(): InboxApplier | undefined;
  remoteStarts(): RemoteStarts | undefined;
  /** A firing may be due now (a run now claimed elsewhere): the sweep looks. */
  schedulesDue(): void;
  runningAgents(): Iterable<string>;
}

export function storeSignals(targets: SignalTargets): StoreSignals {
  return {
    leaseAcquired: (agentId, grant) => targets.takeOver(agentId, grant.epoch),
    partitionsAcquired: (grants) => targets.partitionsTaken?.(grants),
    leasesLost: (agentIds) => targets.leasesLost(agentIds),
    approvalFiled: (agentId) => targets.inboxApplier()?.wake(agentId),
    startsFiled: () => targets.inboxApplier()?.startsFiled(),
    schedulesDue: () => targets.schedulesDue(),
    filedStartMoved: (executionId) => targets.remoteStarts()?.heard(executionId),
    connectionLost: (error) => {
      targets.logger.warn(
        `[phronomy] a connection of the store at ${targets.storePath} was lost (${error.message}); the operation using it fails or reads back its outcome, and the next one connects again`,
      );
    },
    runningAgents: () => targets.runningAgents(),
  };
}
