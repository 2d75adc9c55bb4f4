// What a store can do beyond reading and writing executions, said once by
// the store itself (docs/decisions/0064-store-capabilities.md), and the one
// way a store tells the runtime what happened underneath it.
//
// The runtime used to find a store's abilities by probing for methods and
// to hang a dozen callbacks on it after it was built. Now a store declares
// `capabilities`, `Phronomy.open` checks the declaration against the
// methods once (`checkCapabilities`), and the runtime hands the store one
// `StoreSignals` object (`listen`). A store of the application's own that
// declares nothing is a plain store: reads and writes, nothing else.

import { InvalidInputError } from "../errors.js";

/** The abilities a store declares. Each one promises the methods named in
 * `capabilityMethods`. */
export interface StoreCapabilities {
  /** Conversations leased to one process at a time, every write fenced by
   * the lease's epoch (PostgreSQL). */
  readonly leases: boolean;
  /** Leases held by partition, taken over whole, with the partition facts
   * recovery reads (PostgreSQL, docs/decisions/0030). */
  readonly partitions: boolean;
  /** Decisions filed for the process that holds the conversation
   * (docs/decisions/0011, 0015). */
  readonly approvalInbox: boolean;
  /** Starts filed for the process that holds the conversation
   * (docs/decisions/0031). */
  readonly startInbox: boolean;
  /** A durable queue of messages per conversation (docs/decisions/0025). */
  readonly queue: boolean;
  /** Reads of queued messages (an owner's store, a SQLite visitor). */
  readonly queueReads: boolean;
  /** Pruning of finished executions (docs/decisions/0027). */
  readonly pruning: boolean;
  /** Scheduled starts of a conversation (docs/decisions/0078). Optional:
   * a store of the application's own that predates them declares nothing. */
  readonly schedules?: boolean;
  /** Reads of schedules only (`getSchedule`, `listSchedules`): a SQLite
   * visitor lists them (docs/decisions/0088); `schedules` implies them. */
  readonly scheduleReads?: boolean;
  /** Cancelling a schedule and claiming its firing for the process that
   * fires it (`cancelSchedule`, `claimSchedules`): a SQLite visitor asks
   * so beside a live owner (docs/decisions/0097); `schedules` implies them. */
  readonly scheduleActions?: boolean;
  /** Executions a page at a time by cursor, searched, and counted over the
   * whole store (docs/decisions/0082). */
  readonly pages: boolean;
  /** Keyed signals (`env.signal`): a wait found by its key, a signal kept
   * for a wait not committed yet (docs/decisions/0077). */
  readonly signals: boolean;
  /** Waits indexed by due time, for the due sweep (docs/decisions/0076;
   * absent: false — a store without it has no timers fired on time). */
  readonly dueWaits?: boolean;
}

export type StoreCapability = keyof StoreCapabilities;

/** A store that declares nothing: reads and writes only. */
export const plainStore: StoreCapabilities = {
  leases: false,
  partitions: false,
  approvalInbox: false,
  startInbox: false,
  queue: false,
  queueReads: false,
  pruning: false,
  pages: false,
  signals: false,
  dueWaits: false,
};

/** The methods each ability promises; `Phronomy.open` refuses a store
 * that declares one without them. */
export const capabilityMethods: { readonly [C in StoreCapability]: readonly string[] } = {
  leases: ["acquireLease", "leaseOf", "heldEpochOf", "leaseHolder", "releaseLease", "unfinishedExecutionsOf"],
  partitions: [
    "unfinishedExecutionsInPartitions",
    "markPartitionsScanned",
    "partitionOf",
    "partitionScanned",
    "partitionHeldSince",
    "partitionHeld",
    "partitionHeldAt",
    "partitionLapsedHere",
    "partitionSettling",
  ],
  approvalInbox: ["fileDecision", "claimDecisions", "settleDecision", "readDecisions", "approvalDecided"],
  startInbox: ["fileStart", "readStarts", "claimFiledStarts", "cancelFiledStart"],
  queue: ["enqueueMessage", "cancelQueued", "queuedMessages"],
  queueReads: ["queuedMessage", "listQueuedMessages"],
  pruning: ["pruneExecutions"],
  schedules: ["createSchedule", "getSchedule", "listSchedules", "cancelSchedule", "nextScheduleDue", "dueSchedules", "claimSchedules", "settleScheduleFiring"],
  scheduleReads: ["getSchedule", "listSchedules"],
  scheduleActions: ["cancelSchedule", "claimSchedules"],
  pages: ["pageExecutions", "countExecutions"],
  signals: ["sendSignal", "takeStoredSignal", "dropSignal"],
  dueWaits: ["dueWaits", "nextDueAt"],
};

/** What the store tells the runtime, and the one thing it asks of it.
 * Every call comes from the store's own timers and connections; none may
 * throw into it. */
export interface StoreSignals {
  /** A lease asked for and refused was taken over in the background: the
   * conversation is recovered here now (docs/decisions/0010). */
  leaseAcquired(agentId: string, grant: { readonly owner: string; readonly epoch: number }): void;
  /** Partitions taken in the background; their unfinished executions are
   * recovered here (docs/decisions/0030). */
  partitionsAcquired(grants: readonly { readonly partition: number; readonly epoch: number }[]): void;
  /** Conversations whose lease (or partition) this process no longer
   * holds: taken over, expired under a stalled renewal, or given up by
   * balancing. Their executions go on wherever they are taken next; the
   * runtime's callers waiting here follow them there. */
  leasesLost(agentIds: readonly string[]): void;
  /** A decision may wait in the approval inbox for a conversation held here. */
  approvalFiled(agentId: string): void;
  /** Starts may wait for partitions held here (docs/decisions/0047). */
  startsFiled(): void;
  /** A schedule's firing may be due now: another process claimed a run
   * now for the processes that fire it (docs/decisions/0097). */
  schedulesDue(): void;
  /** A start this process filed moved (its owner wrote or refused it);
   * undefined when anything may have moved (the listener reconnected). */
  filedStartMoved(executionId: string | undefined): void;
  /** One of the store's connections failed: for the log (the operation
   * using it fails or reads its outcome back). */
  connectionLost(error: Error): void;
  /** Asked by the store: the conversations with an execution running here
   * (their partitions are given up last when balancing). */
  runningAgents(): Iterable<string>;
}

/** Signals nobody listens to: what a store holds until `listen`. */
export const quietSignals: StoreSignals = {
  leaseAcquired: () => undefined,
  partitionsAcquired: () => undefined,
  leasesLost: () => undefined,
  approvalFiled: () => undefined,
  startsFiled: () => undefined,
  schedulesDue: () => undefined,
  filedStartMoved: () => undefined,
  connectionLost: () => undefined,
  runningAgents: () => [],
};

/** The part of a store this module reads. */
interface Declaring {
  readonly path?: string;
  readonly capabilities?: StoreCapabilities;
}

/** What the store declared; a store that declares nothing is plain. */
export function capabilitiesOf(store: object): StoreCapabilities {
  return (store as Declaring).capabilities ?? plainStore;
}

/** Refuses a store whose declaration promises methods it lacks, naming
 * them, so a wrong store fails at open and not in the middle of a run. */
export function checkCapabilities(store: object): void {
  const declared = (store as Declaring).capabilities;
  if (declared === undefined) return;
  if (typeof declared !== "object" || declared === null) {
    throw new InvalidInputError(`the store's capabilities must be an object of booleans (${Object.keys(plainStore).join(", ")}), got ${typeof declared}`);
  }
  const methods = store as Record<string, unknown>;
  const missing: string[] = [];
  for (const capability of Object.keys(capabilityMethods) as StoreCapability[]) {
    if (declared[capability] !== true) continue;
    for (const method of capabilityMethods[capability]) {
      if (typeof methods[method] !== "function") missing.push(`${capability}: ${method}()`);
    }
  }
  if (missing.length > 0) {
    const where = (store as Declaring).path ?? "given to Phronomy.open";
    throw new InvalidInputError(`the store ${where} declares capabilities it does not implement: ${missing.join(", ")}`, { details: { missing } });
  }
}
