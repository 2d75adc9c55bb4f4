// The one way back in (docs/decisions/0062, "One way back in"): every
// recovery of a conversation live here — `env.recover()`, a lease or
// partition taken over, a retake on demand, a fenced write, a heal after a
// store fault, a session still settling, a decision on an execution held
// after an unknown outcome, and the retries the core asks for — is a
// `RecoveryRequested(cause, facts)` to the core. The core answers
// `ReadRows(epoch, …)` (a new epoch: this pipeline reads the rows, releases
// what a fault held, installs, restores the queue) or `RecoveryJoined` (one
// runs: a trigger with new facts makes it read again), and the pass ends
// with `RecoveryFinished(epoch, outcome)`: a stale epoch is dropped; the
// conversation is ready (`OpenAdmissions`, `OpenInbox`), read again under a
// new epoch, or held with `RetryAfter` from the core's one backoff.
//
// The first use of a conversation asks the core the same way
// (`Conversations.prepare`, cause OpenScan or FirstUse). What one pass does
// with the rows is `agent-recoveries.ts`'s; nothing here chooses the rows,
// counts failures or keeps a timer of its own besides the core's RetryAfter.

import {
  EffectKind,
  HoldCause,
  MessageKind as M,
  Ownership,
  RecoveryCause,
  RecoveryFact,
  RecoveryOutcome,
  ResultCode,
  RowsPolicy,
} from "../../assembly/abi.js";
import type { ExecutionStore } from "../store/store.js";
import type { ControlLoop } from "./control-loop.js";
import type { Conversations } from "./conversations.js";
import type { Coordinator } from "./coordinator.js";
import { heldEpochOf, leasingStoreOf } from "./leases.js";
import type { RecoveredExecution } from "./recovery.js";
import type { AgentEntry } from "./requests.js";

/** What the pipeline asks of its environment (agent-recoveries.ts wires it). */
export interface RecoveryPipelineHost {
  readonly store: ExecutionStore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  readonly conversations: Pick<Conversations, "holding">;
  /** Recovery runs by itself here (`Phronomy.open`'s `recover`): told to
   * the core with every request (`RecoversByItself`). */
  readonly recoverOnDefine: boolean;
  closed(): boolean;
  /** One pass with the rows read from the store now (a later epoch, a retry). */
  passFromStore(entry: AgentEntry, readQueue: boolean): Promise<RecoveredExecution[]>;
  /** The facts of the pass just run on the conversation
   * (`RecoveryFact.StartPreparingHere`), taken: the core decides from
   * them and its own tables whether the conversation is still settling. */
  passFacts(entry: AgentEntry): number;
}

/** One trigger of a recovery. */
export interface RecoveryTrigger {
  readonly cause: RecoveryCause;
  /** The first epoch's pass (the rows this trigger reads); by default, and
   * for every later epoch, the rows read from the store now. */
  readonly pass?: (entry: AgentEntry, readQueue: boolean) => Promise<RecoveredExecution[]>;
  /** The caller needs a pass begun after it asked (`env.recover()`, a
   * decision after an unknown outcome): joined, it waits for the running
   * recovery to end and asks again. */
  readonly fresh?: boolean;
  /** The store just gave this process the conversation's lease: told to
   * the core first (a conversation owned elsewhere is registering again). */
  readonly ownedHere?: boolean;
  /** The wait of a `RetryAfter(epoch)` is over: asked as `RetryDue(epoch)`,
   * which the core drops if the conversation is no longer held at that
   * epoch, and which recovers it with the cause its hold names. */
  readonly retryOf?: number;
}

/** The core's answer to a `RecoveryRequested`. */
type Order = ({ readonly kind: "read" } & ReadOrder) | { readonly kind: "joined" } | { readonly kind: "refused" };

/** What the core's `ReadRows` orders a pass to do: its epoch, and whether
 * it reads the conversation's durable queue too (the core decides). */
interface ReadOrder {
  readonly epoch: number;
  readonly readQueue: boolean;
  /** The rows the core said to read; `Nothing` is honoured for a
   * conversation moved here (decision 0101), the other passes read the
   * store as before. */
  readonly rows?: RowsPolicy;
}

/** The core's answer to a `RecoveryFinished`. */
type Next = ({ readonly kind: "again" } & ReadOrder) | { readonly kind: "ended" };

/** A recovery under way, from its first epoch to ready or held. */
interface Running {
  readonly ended: Promise<void>;
  readonly end: () => void;
  /** The epoch its pass runs under now: only that epoch's finish ends it
   * (a pass the owner's report abandoned finishes later, under its own). */
  epoch: number;
}

export class RecoveryPipeline {
  /** Recoveries under way, by agent id (joined triggers wait for them). */
  private readonly running = new Map<string, Running>();

  constructor(private readonly host: RecoveryPipelineHost) {}

  /** Asks the core for a recovery of the conversation live here and
   * carries out its answer; undefined when it is not live, or the core
   * refused (owned elsewhere). Rejects with the pass's error. */
  request(agentId: string, trigger: RecoveryTrigger): Promise<RecoveredExecution[] | undefined> {
    return this.carryOut(agentId, trigger, (entry) => this.recover(entry, trigger));
  }

  /** On the loop: asks the core now, in this turn — a start asked `Admit`
   * after it in the same turn finds the conversation recovering
   * (`WaitUntilReady`) — then carries out its answer as `request` does,
   * and resolves as it does. Undefined when the core refused it (a stale
   * entry), or joined a recovery this pipeline does not run (a first
   * use's): nothing is carried out. */
  requestNow(entry: AgentEntry, trigger: RecoveryTrigger): Promise<RecoveredExecution[] | undefined> | undefined {
    const order = this.requestOrder(entry, trigger);
    if (order.kind === "refused") return undefined;
    return this.carryOut(entry.id, trigger, () => this.recover(entry, trigger, order));
  }

  /** Runs a recovery with the conversation's entry kept meanwhile. */
  private carryOut(
    agentId: string,
    trigger: RecoveryTrigger,
    recovery: (entry: AgentEntry) => Promise<RecoveredExecution[] | undefined>,
  ): Promise<RecoveredExecution[] | undefined> {
    return this.host.conversations.holding(agentId, recovery);
  }

  /** A first use's recovery (`Conversations.prepare` read the rows the
   * core chose under `epoch`) ends as every recovery does: `RecoveryFinished`,
   * and the core's answer carried out here — the next epoch's passes (a
   * trigger with new facts joined it: a takeover, a fenced write), or the
   * retry of a hold. A later epoch's failure leaves the conversation held
   * in the core (its retry recovers it); the first use does not fail for it. */
  async finishFirstUse(entry: AgentEntry, epoch: number, outcome: RecoveryOutcome): Promise<void> {
    const facts = this.host.passFacts(entry);
    const next = await this.onLoop(entry, () => this.finish(entry, epoch, outcome, facts));
    if (next.kind === "ended") return;
    const trigger: RecoveryTrigger = { cause: RecoveryCause.Retry };
    this.begin(entry.id, next.epoch);
    await this.runEpochs(entry, next, trigger).catch(() => undefined);
  }

  /** A store fault held the conversation, or one of its executions, here:
   * held in the core, which answers when to try again; a recovery under
   * way is joined (it finds what is held when it ends). */
  held(agentId: string, cause: HoldCause): void {
    void this.host.conversations
      .holding(agentId, async (entry) => {
        const joins = await this.onLoop(entry, () => this.applyHeld(entry, cause));
        if (joins) await this.request(agentId, { cause: RecoveryCause.HealAfterStoreFault });
      })
      .catch(() => undefined);
  }

  /** `asked`: the core's answer to the first request, asked on the loop already. */
  private async recover(entry: AgentEntry, trigger: RecoveryTrigger, asked?: Order): Promise<RecoveredExecution[] | undefined> {
    let first = asked;
    for (;;) {
      const order = first ?? (await this.onLoop(entry, () => this.requestOrder(entry, trigger)));
      first = undefined;
      if (order.kind === "refused") return undefined;
      if (order.kind === "read") return this.runEpochs(entry, order, trigger);
      // Joined: the recovery under way covers it, or (`fresh`) it is waited for.
      const running = this.running.get(entry.id);
      if (!trigger.fresh || running === undefined) return [];
      await running.ended;
    }
  }

  /** On the loop: `RecoveryRequested`, and what the core answered. The
   * owner is told from the store's lease: not owned here while it is not
   * held here (the core refuses `env.recover()` then). */
  private requestOrder(entry: AgentEntry, trigger: RecoveryTrigger): Order {
    const { coordinator } = this.host;
    let facts = this.factsOf(entry);
    // Moved here by this process (decision 0101): the store's fact that
    // nothing of it was anywhere when it moved, nothing since.
    if (trigger.cause === RecoveryCause.Moved && partitionScannedOf(this.host.store, entry.id)) facts |= RecoveryFact.PartitionScanned;
    if (trigger.ownedHere && (facts & RecoveryFact.LeaseNotHeldHere) === 0)
      coordinator.apply(M.ConversationOwned, entry.slot, entry.generation, Ownership.Here);
    const code =
      trigger.retryOf !== undefined
        ? coordinator.apply(M.RetryDue, entry.slot, entry.generation, trigger.retryOf, facts)
        : coordinator.apply(M.RecoveryRequested, entry.slot, entry.generation, trigger.cause, facts);
    const effects = code === ResultCode.Ok ? coordinator.settings.core.effects() : [];
    const read = effects.find((effect) => effect.kind === EffectKind.ReadRows);
    const running = this.running.get(entry.id);
    if (read !== undefined && read.kind === EffectKind.ReadRows) {
      this.begin(entry.id, read.epoch);
      return { kind: "read", epoch: read.epoch, readQueue: read.readQueue, rows: read.rows };
    }
    if (code !== ResultCode.Ok || running === undefined) return { kind: "refused" };
    return { kind: "joined" };
  }

  /** What the store says of the conversation now (`RecoveryFact`). */
  private factsOf(entry: AgentEntry): number {
    const leasing = leasingStoreOf(this.host.store);
    let facts = this.host.recoverOnDefine ? RecoveryFact.RecoversByItself : 0;
    if (leasing !== undefined) facts |= RecoveryFact.Leasing | (leasing.leaseOf(entry.id) === undefined ? RecoveryFact.LeaseNotHeldHere : 0);
    return facts;
  }

  private begin(agentId: string, epoch: number): void {
    let end = (): void => undefined;
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    const running: Running = { ended, end, epoch };
    // One abandoned by the owner's report (its pass still running) is over
    // for those waiting on it: they ask again, and find this one.
    this.running.get(agentId)?.end();
    this.running.set(agentId, running);
  }

  /** Runs the passes of a recovery, one per epoch the core orders, until
   * it is ready or held. */
  private async runEpochs(entry: AgentEntry, first: ReadOrder, trigger: RecoveryTrigger): Promise<RecoveredExecution[]> {
    const report: RecoveredExecution[] = [];
    let order = first;
    let pass = trigger.pass ?? ((held: AgentEntry, readQueue: boolean) => this.host.passFromStore(held, readQueue));
    // A conversation moved here, with nothing anywhere: the core orders nothing read.
    if (trigger.cause === RecoveryCause.Moved && first.rows === RowsPolicy.Nothing && !first.readQueue) pass = async () => [];
    for (;;) {
      const { epoch } = order;
      let failure: { readonly error: unknown } | undefined;
      let outcome: RecoveryOutcome = RecoveryOutcome.StoreFault;
      try {
        report.push(...(await pass(entry, order.readQueue)));
        outcome = RecoveryOutcome.Recovered;
      } catch (error) {
        failure = { error };
      }
      // Taken either way; the core reads them only for a pass that ran.
      const facts = this.host.passFacts(entry);
      const next = await this.onLoop(entry, () => this.finish(entry, epoch, outcome, facts));
      if (next.kind === "again") {
        order = next;
        pass = (held, readQueue) => this.host.passFromStore(held, readQueue);
        continue;
      }
      if (failure !== undefined) throw failure.error;
      return report;
    }
  }

  /** On the loop: `RecoveryFinished`, and what follows it. */
  private finish(entry: AgentEntry, epoch: number, outcome: RecoveryOutcome, facts: number): Next {
    const { coordinator } = this.host;
    const code = coordinator.apply(M.RecoveryFinished, entry.slot, entry.generation, epoch, outcome, facts);
    const effects = code === ResultCode.Ok ? coordinator.settings.core.effects() : [];
    const again = effects.find((effect) => effect.kind === EffectKind.ReadRows);
    const running = this.running.get(entry.id);
    if (again !== undefined && again.kind === EffectKind.ReadRows) {
      if (running?.epoch === epoch) running.epoch = again.epoch;
      return { kind: "again", epoch: again.epoch, readQueue: again.readQueue };
    }
    // A hold's `RetryAfter` among the effects: carried out by the
    // coordinator (`retryAfter`).
    this.end(entry.id, epoch);
    return { kind: "ended" };
  }

  /** The recovery is over: ready (`OpenAdmissions`, `OpenInbox`, carried
   * out by the coordinator), held, or dropped as stale. */
  private end(agentId: string, epoch: number): void {
    const running = this.running.get(agentId);
    if (running === undefined || running.epoch !== epoch) return;
    this.running.delete(agentId);
    running.end();
  }

  /** On the loop: `ConversationHeld` of a ready conversation, and its
   * retry; true when a recovery under way is to be joined instead. */
  private applyHeld(entry: AgentEntry, cause: HoldCause): boolean {
    const { coordinator } = this.host;
    const code = coordinator.apply(M.ConversationHeld, entry.slot, entry.generation, cause);
    return code !== ResultCode.Ok && this.running.has(entry.id);
  }

  /** The core's `RetryAfter` (carried out by the coordinator, whatever
   * message held the conversation: a pass's end, a store fault, a start's
   * admission released while held for it, 0140): the conversation is
   * asked for again after the core's backoff — at once for a delay of 0.
   * The core asks only on a leasing store where recovery runs by itself
   * (the facts `Leasing`, `RecoversByItself`); on SQLite, or with
   * `recover: false`, a held conversation waits for `env.recover()`. What
   * stays here is I/O: the timer, a closed environment, and the store's
   * lease when it fires (a partition not held here is recovered when it
   * is taken). */
  retryAfter(agentId: string, epoch: number, delayMs: number): void {
    if (this.host.closed()) return;
    // The core drops the retry if a recovery began meanwhile (a takeover),
    // and chooses its cause from the hold's.
    const trigger: RecoveryTrigger = { cause: RecoveryCause.Retry, retryOf: epoch };
    const retry = (): void => {
      if (this.host.closed() || heldEpochOf(this.host.store, agentId) === undefined) return;
      void this.host.conversations.holding(agentId, (entry) => this.recover(entry, trigger)).catch(() => undefined);
    };
    if (delayMs === 0) retry();
    else setTimeout(retry, delayMs).unref();
  }

  /** Runs `body` on the control loop and resolves with what it returned. */
  private onLoop<T>(entry: AgentEntry, body: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.host.loop.post(() => resolve(body()), { completion: { fail: reject }, label: `the recovery of conversation "${entry.id}"` });
    });
  }
}

/** The store's fact that the conversation's partition was read (or, for a
 * conversation it moved here, that nothing of it was anywhere). */
function partitionScannedOf(store: ExecutionStore, agentId: string): boolean {
  return (store as Partial<{ partitionScanned(agentId: string): boolean }>).partitionScanned?.(agentId) === true;
}
