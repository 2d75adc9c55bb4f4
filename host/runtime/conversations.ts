// The bookkeeping of conversations (docs/decisions/0024-conversations.md):
// an agent id is a conversation, and a conversation costs nothing until it
// is used. Defining one writes nothing and reads nothing; its core entry
// (an agent slot) is registered on first use — after the environment's one
// scan of unfinished executions and this conversation's own recovery — and
// freed (PurgeAgent) once it is idle: no request waiting for it and no
// execution holding its admission. The store writes the agent's root with
// its first preparation, which also refuses a closed conversation.
//
// Rules kept here:
// * A conversation's entry is used by counted host operations (a start or
//   a resume until it is admitted or refused, a recovery, a close, the
//   messages queued behind it); the core counts them too, and decides when
//   it is idle (docs/decisions/0062): no use, not pinned, no message queued,
//   no head starting, no admission held — a running, suspended or held
//   execution keeps it. Its `ReleaseConversation` is the only way an entry
//   is let go by itself here (`agent.release()` asks for it: PurgeAgent).
// * One conversation id belongs to one definition in this process.
// * On a leasing store (PostgreSQL) a conversation's lease is taken on
//   first use and given up when it is let go. An agent defined by its id
//   (one conversation per definition) keeps its entry, and its lease,
//   while defined: the core pins it at its registration, from the facts
//   `ConversationOwned` reports.
// * Decisions filed in the approval inbox are claimed only for
//   conversations that have a suspended execution here.
// * A conversation at rest (the core's `conversationAtRest`: ready, no use,
//   nothing queued, its execution at rest and let go of here) keeps no
//   record: its id and definition by agent slot (resting-conversations.ts),
//   its record rebuilt by `find` (by id) or the coordinator's `agentAt` (by
//   slot) when anything names it again (docs/decisions/0092).

import { MessageKind as M, OwnerFact, Ownership, RecoveryCause, RecoveryFact, RecoveryOutcome, ResultCode, RowsPolicy } from "../../assembly/abi.js";
import { AgentBusyError, CoreFailureError, InvalidInputError } from "../errors.js";
import type { ExecutionRow } from "../store/records.js";
import type { ControlLoop } from "./control-loop.js";
import type { Coordinator } from "./coordinator.js";
import { errorForCode } from "./error-codes.js";
import { leasingStoreOf } from "./leases.js";
import type { RecoveredExecution } from "./recovery.js";
import { recoveryFactsOf, recoveryOrderOf, type RecoveryOrder } from "./recovery-order.js";
import type { AgentEntry } from "./requests.js";
import type { ExecutionStore } from "../store/store.js";
import { Agent, type AgentHost } from "./agent.js";
import type { DefinitionKind } from "./definition-kind.js";
import { Conversation, type FirstRecoveryCause } from "./conversation-record.js";
import { RestingConversations } from "./resting-conversations.js";

/** What the environment lends this bookkeeping. */
export interface ConversationHost {
  readonly store: ExecutionStore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  /** Recovery runs (false: `recover: false`, or a visitor). */
  readonly recovers: boolean;
  /** The unfinished executions by agent: the environment's one scan. */
  unfinishedByAgent(): Promise<Map<string, ExecutionRow[]>>;
  /** When the read of the scan `unfinishedByAgent` returns now began
   * (`performance.now()`). */
  unfinishedReadAt(): number;
  /** Conversations with queued messages (docs/decisions/0025) found by that
   * scan and not recovered yet: agent id → the definition name the head
   * carries. Read once the scan resolved. */
  queuedAtOpen(): Map<string, string | undefined>;
  /** Recovers these rows of the conversation registered as `entry`, read
   * from `readAt` on (`performance.now()`). */
  recoverEntry(entry: AgentEntry, rows: readonly ExecutionRow[], readAt: number, readQueue: boolean): Promise<RecoveredExecution[]>;
  /** Tells the core how the first use's recovery of `epoch` ended and
   * carries out its answer (read again, or held with a retry), as for
   * every recovery (`RecoveryPipeline.finishFirstUse`). */
  finishRecovery(entry: AgentEntry, epoch: number, outcome: RecoveryOutcome): Promise<void>;
  /** The conversation's entry was freed here: its executions all ended. */
  conversationFreed(agentId: string): void;
  /** Takes the lease on a leasing store: when (rows must be read after
   * it), false when another live process holds it, undefined without leases. */
  ownAgent(agentId: string): Promise<number | false | undefined>;
  /** An execution of the conversation suspended here (`Followers.suspended`). */
  executionSuspended(agentId: string): void;
  /** Records a conversation's recovery report (`env.recovery(id)`). */
  reportRecovery(agentId: string, report: Promise<RecoveredExecution[]>): void;
}

/** The core's order for a first recovery; `finished`: it asked for
 * nothing, and was finished in the same turn. */
type FirstRecoveryOrder = RecoveryOrder & { readonly finished: boolean };

/** The environment's one scan, as a first use found it. */
interface FirstScan {
  /** Unfinished executions by agent. */
  readonly byAgent: Map<string, ExecutionRow[]>;
  /** Conversations with messages queued at open (`queuedAtOpen`). */
  readonly queued: Map<string, string | undefined>;
  /** When its read began (`performance.now()`). */
  readonly readAt: number;
}

/** The conversation's readiness: its pending promise, or its entry once
 * it was ready. */
function readyOf(conversation: Conversation, pending: ReadonlyMap<Conversation, Promise<AgentEntry>>): Promise<AgentEntry> {
  return pending.get(conversation) ?? Promise.resolve(conversation.entry as AgentEntry);
}

/** Two records of one registration: a conversation rebuilt after it was
 * let go of at rest is another object with the same slot and generation. */
function sameRegistration(one: AgentEntry, other: AgentEntry): boolean {
  return one.slot === other.slot && one.generation === other.generation;
}

/** How long a conversation rebuilt stays before it is let go of again at
 * rest, if no path let it go of itself. */
const restAgainAfterMs = 1_000;

export class Conversations {
  /** Conversations with a core entry, or getting one. */
  private readonly live = new Map<string, Conversation>();
  /** The readiness of each conversation being registered, owned (leases)
   * and recovered (kept, rejected, until a failed one is forgotten); gone
   * once it resolved (a million suspended
   * conversations would each keep a settled promise): `readyOf` then
   * answers with the entry. */
  private readonly pending = new Map<Conversation, Promise<AgentEntry>>();
  /** Conversations at rest (docs/decisions/0092): no record, their id and
   * definition by agent slot; `find` rebuilds one when it is named. */
  private readonly resting = new RestingConversations();
  /** The definitions of conversations at rest, by the index `resting` keeps. */
  private readonly restingKinds: DefinitionKind[] = [];
  private readonly restingKindIndex = new Map<DefinitionKind, number>();
  /** Conversations rebuilt since the last look (`restWoken`): let go of
   * again once at rest, if no path that woke them did. */
  private woken: Conversation[] = [];
  private wokenTimer: ReturnType<typeof setTimeout> | undefined;
  /** `env.agent({ id })` definitions, by id. */
  private readonly byId = new Map<string, DefinitionKind>();
  /** `env.agent({ name })` definitions, by name. */
  private readonly byName = new Map<string, DefinitionKind>();

  constructor(private readonly host: ConversationHost) {
    host.coordinator.onAgentSuspended = (agent) => {
      if (this.find(agent.id)?.entry === agent) this.host.executionSuspended(agent.id);
    };
    host.coordinator.onConversationIdle = (agent) => this.carryOutRelease(agent);
    host.coordinator.agentMissing = (slot) => this.wakeSlot(slot);
    host.coordinator.agentNamed = (agentId) => this.find(agentId)?.entry;
    host.coordinator.onExecutionLetGo = (agent) => this.restIfAtRest(this.live.get(agent.id));
  }

  /** Core entries held now (records and those at rest; for tests and benchmarks). */
  get liveCount(): number {
    return this.live.size + this.resting.size;
  }

  /** Conversations at rest, kept with no record (for tests and benchmarks). */
  get restingCount(): number {
    return this.resting.size;
  }

  /** When an execution of the conversation at rest `agentId` was last
   * released here, as its arena record keeps it (for tests; undefined when
   * none was, or it is not at rest). */
  restingReleasedAt(agentId: string): number | undefined {
    const slot = this.resting.slotOf(agentId);
    return slot === undefined ? undefined : this.resting.releasedAt(slot);
  }

  /** The agent slot of a conversation with a core entry here, live or at
   * rest, without rebuilding its record (for tests: the core's record of it). */
  slotOf(agentId: string): number | undefined {
    const conversation = this.live.get(agentId);
    if (conversation !== undefined) return conversation.entry?.slot;
    return this.resting.slotOf(agentId);
  }

  /** Whether the conversation is at rest here, kept with no record (for tests). */
  isResting(agentId: string): boolean {
    return this.resting.slotOf(agentId) !== undefined;
  }

  /** The one way back in (docs/decisions/0092): the conversation's record
   * if it is live here, rebuilt if it is at rest. */
  private find(agentId: string): Conversation | undefined {
    const conversation = this.live.get(agentId);
    if (conversation !== undefined) return conversation;
    const slot = this.resting.slotOf(agentId);
    return slot === undefined ? undefined : this.wakeSlot(slot);
  }

  /** Rebuilds the record of the conversation at rest in agent `slot`
   * around the core's slot and generation, its definition's kind, no use;
   * undefined when the slot holds none at rest. */
  private wakeSlot(slot: number): Conversation | undefined {
    const id = this.resting.idAt(slot);
    const kind = this.restingKinds[this.resting.kindAt(slot) ?? -1];
    const generation = this.host.coordinator.settings.core.agentGeneration(slot);
    if (id === undefined || kind === undefined || generation === undefined) return undefined;
    const releasedAt = this.resting.releasedAt(slot);
    this.resting.remove(slot);
    const conversation = new Conversation(id, kind, RecoveryCause.FirstUse);
    conversation.register(slot, generation);
    this.live.set(id, conversation);
    this.host.coordinator.restoreAgentEntry(conversation, releasedAt);
    this.woken.push(conversation);
    this.wokenTimer ??= setTimeout(() => this.restWoken(), restAgainAfterMs);
    this.wokenTimer.unref?.();
    return conversation;
  }

  /** The conversations rebuilt a while ago are let go of again if still at
   * rest (a path that woke one and used it lets it go itself once done). */
  private restWoken(): void {
    this.wokenTimer = undefined;
    const woken = this.woken;
    this.woken = [];
    this.host.loop.post(
      () => {
        for (const conversation of woken) this.restIfAtRest(conversation);
      },
      { label: "the conversations rebuilt a while ago, let go of again at rest" },
    );
  }

  /** On the loop: lets go of the conversation's record if the core says it
   * is at rest (`conversationAtRest`) and nothing of it lives only here —
   * its execution let go of (decision 0066), no use counted, no readiness
   * pending. What stays: its id and definition by slot (`resting`). */
  private restIfAtRest(conversation: Conversation | undefined): void {
    if (conversation === undefined || conversation.users !== 0 || conversation.failed || this.pending.has(conversation)) return;
    const entry = conversation.entry;
    if (entry === undefined || this.live.get(conversation.id) !== conversation) return;
    const { coordinator } = this.host;
    if (!coordinator.settings.core.conversationAtRest(entry.slot) || !coordinator.executionLetGoOf(entry)) return;
    this.live.delete(conversation.id);
    const releasedAt = coordinator.letGoAtRest(entry.slot);
    this.resting.add(entry.slot, conversation.id, this.restingKindOf(conversation.kind), releasedAt);
  }

  private restingKindOf(kind: DefinitionKind): number {
    let index = this.restingKindIndex.get(kind);
    if (index === undefined) {
      index = this.restingKinds.push(kind) - 1;
      this.restingKindIndex.set(kind, index);
    }
    return index;
  }

  /** Conversations whose readiness is still pending (or failed, not yet
   * forgotten): for tests — a ready one keeps no promise. */
  get pendingCount(): number {
    return this.pending.size;
  }

  isDefinedId(agentId: string): boolean {
    return this.byId.has(agentId);
  }

  isDefinedName(name: string): boolean {
    return this.byName.has(name);
  }

  /** The names and ids defined here: the schedules this process fires (docs/decisions/0078). */
  definedScope(): { definitions: string[]; agentIds: string[] } {
    return { definitions: [...this.byName.keys()], agentIds: [...this.byId.keys()] };
  }

  /** Adds a definition; its conversations with unfinished executions are
   * recovered once the scan is read (the report). */
  define(kind: DefinitionKind): Promise<RecoveredExecution[]> {
    if (kind.name !== undefined) this.byName.set(kind.name, kind);
    else this.byId.set(kind.id as string, kind);
    const recovered = this.recoverDefinition(kind);
    this.definitions.push(
      recovered.then(
        () => undefined,
        () => undefined,
      ),
    );
    return recovered;
  }

  /** One per definition: settles once its recovery (or, with leases, its
   * lease) is done. */
  private readonly definitions: Promise<void>[] = [];

  /** Resolves once every definition made so far is ready (`env.recover()`
   * starts after them, as it waited for each agent's definition before). */
  async definitionsSettled(): Promise<void> {
    await Promise.all(this.definitions);
  }

  /** The definition an unfinished row belongs to, if defined here. */
  kindOfRow(row: ExecutionRow): DefinitionKind | undefined {
    const name = row.metadata.config?.["definition"];
    return this.kindOf(row.agentId, typeof name === "string" ? name : undefined);
  }

  /** The definition of a conversation (its id, or the definition name its
   * rows and queued messages carry), if defined here. */
  kindOf(agentId: string, name: string | undefined): DefinitionKind | undefined {
    return this.byId.get(agentId) ?? (name !== undefined ? this.byName.get(name) : undefined);
  }

  /** Refuses a conversation id already used here by another definition. */
  checkOwnership(agentId: string, kind: DefinitionKind): void {
    const other = this.byId.get(agentId) ?? this.kindHere(agentId);
    if (other === undefined || other === kind) return;
    const owner = other.name !== undefined ? `definition "${other.name}"` : `env.agent({ id: ${JSON.stringify(agentId)} })`;
    throw new InvalidInputError(
      `conversation "${agentId}" belongs to ${owner} in this environment; a conversation id names one conversation of one definition`,
      { agentId },
    );
  }

  /** Counts one operation on the conversation; `done` ends it. The entry
   * promise rejects when registration failed (AgentsFull, core failure). */
  use(
    agentId: string,
    kind: DefinitionKind,
    cause: FirstRecoveryCause = RecoveryCause.FirstUse,
  ): { readonly entry: Promise<AgentEntry>; readonly done: () => void } {
    this.checkOwnership(agentId, kind);
    let conversation = this.find(agentId);
    if (conversation === undefined || conversation.failed) {
      conversation = this.open(agentId, kind, cause);
      this.live.set(agentId, conversation);
    }
    this.countUse(conversation, 1);
    const used = conversation;
    let ended = false;
    return {
      entry: readyOf(used, this.pending),
      done: () => {
        if (ended) return;
        ended = true;
        this.countUse(used, -1);
      },
    };
  }

  /** The definition of a conversation live here or at rest, without
   * rebuilding it. */
  private kindHere(agentId: string): DefinitionKind | undefined {
    return this.live.get(agentId)?.kind ?? this.restingKindOfId(agentId);
  }

  private restingKindOfId(agentId: string): DefinitionKind | undefined {
    const slot = this.resting.slotOf(agentId);
    return slot === undefined ? undefined : this.restingKinds[this.resting.kindAt(slot) ?? -1];
  }

  /** The definition of a conversation live here (or defined by its id). */
  liveKind(agentId: string): DefinitionKind | undefined {
    const conversation = this.live.get(agentId);
    if (conversation === undefined) return this.restingKindOfId(agentId) ?? this.byId.get(agentId);
    return !conversation.failed ? conversation.kind : this.byId.get(agentId);
  }

  /** Keeps a live conversation's entry until the returned function is
   * called (messages queued behind it, docs/decisions/0025: the head must
   * find the entry live). A conversation not live here: nothing to keep. */
  hold(agentId: string): () => void {
    const conversation = this.find(agentId);
    if (conversation === undefined || conversation.failed) return () => undefined;
    this.countUse(conversation, 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.countUse(conversation, -1);
    };
  }

  /** The conversation's entry if it has one (or is getting one). */
  liveEntry(agentId: string): Promise<AgentEntry> | undefined {
    const conversation = this.find(agentId);
    return conversation === undefined || conversation.failed ? undefined : readyOf(conversation, this.pending);
  }

  /** The conversation's core entry now, when it has one (not failed). */
  entryNow(agentId: string): AgentEntry | undefined {
    const conversation = this.find(agentId);
    return conversation === undefined || conversation.failed ? undefined : conversation.entry;
  }

  /** A handle on a conversation live here (or defined by its id), for a
   * decision claimed from the approval inbox. */
  handleOf(environment: AgentHost, agentId: string): Agent | undefined {
    const kind = this.kindHere(agentId) ?? this.byId.get(agentId);
    return kind === undefined ? undefined : new Agent({ environment, kind, ready: Promise.resolve() }, agentId);
  }

  /** Ids of the conversations with an entry now. */
  liveIds(): string[] {
    const ids = [...this.live.values()].filter((conversation) => !conversation.failed).map((conversation) => conversation.id);
    for (const id of this.resting.ids()) ids.push(id);
    return ids;
  }

  /** Runs `work` on a live conversation's entry, keeping the entry
   * meanwhile (a recovery: an execution it releases must not let the
   * conversation go under it); undefined when it is not live. */
  async holding<T>(agentId: string, work: (entry: AgentEntry) => Promise<T>): Promise<T | undefined> {
    const conversation = this.find(agentId);
    if (conversation === undefined || conversation.failed) return undefined;
    this.countUse(conversation, 1);
    try {
      const entry = await readyOf(conversation, this.pending).catch(() => undefined);
      return entry === undefined ? undefined : await work(entry);
    } finally {
      this.countUse(conversation, -1);
    }
  }

  /** Lets the conversation go now (`agent.release()`): its pin is lifted
   * and its core entry freed, its lease (PostgreSQL) given up. The core
   * decides whether it can go now (`PurgeAgent`): refused with
   * AgentBusyError while it has work here — it is then let go once that
   * ends (`ReleaseConversation`). Its data stays; a later start uses it
   * again. */
  async release(agentId: string): Promise<void> {
    const conversation = this.find(agentId);
    if (conversation === undefined) return;
    await readyOf(conversation, this.pending).catch(() => undefined);
    // Let go of at rest meanwhile, it is rebuilt: the same registration.
    const current = this.find(agentId);
    if (current === undefined || !sameRegistration(current, conversation)) return;
    const code = await new Promise<number>((resolve, reject) => {
      this.host.loop.post(() => resolve(this.unpinAndFree(this.find(agentId) ?? current)), {
        completion: { fail: reject },
        label: `the release of conversation "${agentId}"`,
      });
    });
    if (code === ResultCode.AgentAdmissionHeld) {
      throw new AgentBusyError(
        agentId,
        `conversation "${agentId}" has an execution running, suspended or held for recovery in this process; it is let go once that ends (or decide, cancel or recover it first)`,
      );
    }
    if (code === ResultCode.ConversationInUse) {
      throw new AgentBusyError(
        agentId,
        `conversation "${agentId}" has a start, resume, retry or recovery in progress, or messages queued, in this process; it is let go once those are admitted and ended`,
      );
    }
  }

  private open(agentId: string, kind: DefinitionKind, cause: FirstRecoveryCause): Conversation {
    const conversation = new Conversation(agentId, kind, cause);
    const ready = this.prepare(conversation);
    this.pending.set(conversation, ready);
    ready.then(
      () => {
        if (this.pending.get(conversation) === ready) this.pending.delete(conversation);
      },
      () => {
        conversation.markFailed();
        if (conversation.users === 0) this.forgetFailed(conversation);
      },
    );
    return conversation;
  }

  /** The open scan (once), the core entry, the lease, then this
   * conversation's unfinished executions recovered before any start: the
   * core says which rows to read (docs/decisions/0062). */
  private async prepare(conversation: Conversation): Promise<AgentEntry> {
    const scanning = this.host.recovers ? this.host.unfinishedByAgent() : undefined;
    const scanReadAt = this.host.unfinishedReadAt();
    const scanned = await scanning;
    const leasing = leasingStoreOf(this.host.store);
    // Without a lease to take between them, the registration and the
    // recovery's request are one loop turn (issue 25: every new
    // conversation's first use), as if no message came in between.
    if (leasing === undefined && scanned !== undefined) {
      const scan = { byAgent: scanned, queued: this.host.queuedAtOpen(), readAt: scanReadAt };
      const { entry, order } = await this.onLoop(conversation, `the first use of conversation "${conversation.id}"`, () => {
        const registered = this.registerNow(conversation);
        return { entry: registered, order: this.requestRecoveryOf(registered, conversation, scan) };
      });
      return this.recoverFirstUse(conversation, entry, order, scan);
    }
    const entry = await this.onLoop(conversation, `the first use of conversation "${conversation.id}"`, () => this.registerNow(conversation));
    const owned = await this.host.ownAgent(conversation.id);
    if (owned === false || scanned === undefined) {
      // Recorded in the core; a start posted later finds it recorded (the
      // loop runs in order), and a closed loop has nothing left to admit.
      this.host.loop.post(() => this.tellOwnership(entry, owned !== false, this.ownerFactsOf(conversation), owned !== false), {
        label: `the ownership of conversation "${conversation.id}"`,
      });
      return entry;
    }
    const scan = { byAgent: scanned, queued: this.host.queuedAtOpen(), readAt: scanReadAt };
    const order = await this.onLoop(conversation, `the recovery of conversation "${conversation.id}"`, () => this.requestRecoveryOf(entry, conversation, scan));
    return this.recoverFirstUse(conversation, entry, order, scan);
  }

  /** On the loop: the facts of the first recovery (what the open scan
   * found) and the core's order for it. */
  private requestRecoveryOf(entry: AgentEntry, conversation: Conversation, scan: FirstScan): FirstRecoveryOrder {
    const leasing = leasingStoreOf(this.host.store);
    // Scanned only when recovery runs by itself here (`recovers`).
    const scanFacts = { inScan: scan.byAgent.has(conversation.id), queuedAtOpen: scan.queued.has(conversation.id), scanReadAt: scan.readAt };
    const facts = recoveryFactsOf(leasing, conversation.id, scanFacts) | RecoveryFact.RecoversByItself;
    return this.requestRecovery(entry, conversation, facts, scan.byAgent.get(conversation.id)?.length ?? 0);
  }

  /** Carries out the first recovery's order: the rows it names read and
   * recovered, unless the core finished it already. */
  private async recoverFirstUse(conversation: Conversation, entry: AgentEntry, order: FirstRecoveryOrder, scan: FirstScan): Promise<AgentEntry> {
    const leasing = leasingStoreOf(this.host.store);
    const scanned = scan.byAgent.get(conversation.id) ?? [];
    scan.byAgent.delete(conversation.id);
    scan.queued.delete(conversation.id);
    if (!order.finished) {
      const fromStore = order.rows === RowsPolicy.FromStore && leasing !== undefined;
      const readAt = fromStore ? performance.now() : scan.readAt;
      const rows = fromStore ? await leasing.unfinishedExecutionsOf(conversation.id) : order.rows === RowsPolicy.FromScan ? scanned : [];
      // Messages queued behind an execution that ended before its head was
      // prepared (the process stopped in between) are restored by the
      // recovery too, so a new start goes behind them.
      const recovered = rows.length > 0 || order.readQueue ? this.recover(conversation, entry, rows, readAt, order.readQueue) : Promise.resolve();
      await this.finishRecovery(entry, order.epoch, recovered);
    }
    return entry;
  }

  /** Recovers the rows and reports it (`env.recovery(id)`). */
  private async recover(conversation: Conversation, entry: AgentEntry, rows: readonly ExecutionRow[], readAt: number, readQueue: boolean): Promise<void> {
    const report = this.host.recoverEntry(entry, rows, readAt, readQueue);
    this.host.reportRecovery(conversation.id, report);
    const recovered = await report;
    this.reports.set(conversation.id, recovered);
  }

  /** Tells the core how the recovery of `epoch` ended — the pipeline
   * carries out its answer: a trigger with new facts that joined makes it
   * read again, a pass that left something held holds it — then passes
   * the first pass's failure on. */
  private async finishRecovery(entry: AgentEntry, epoch: number, recovery: Promise<void>): Promise<void> {
    const outcome = await recovery.then(
      () => RecoveryOutcome.Recovered,
      () => RecoveryOutcome.StoreFault,
    );
    await this.host.finishRecovery(entry, epoch, outcome);
    await recovery;
  }

  /** With `recover: false`, a conversation the store gave this process
   * (a takeover) is recorded owned here and ready, as at its first use:
   * the application recovers it (`env.recover()`). A lease lost before left
   * it owned elsewhere in the core. */
  takenOverUnrecovered(agentId: string): void {
    const entry = this.find(agentId)?.entry;
    if (entry === undefined) return;
    this.host.loop.post(
      () => {
        const now = this.find(agentId)?.entry;
        if (now !== undefined && sameRegistration(now, entry)) this.tellOwnership(now, true, 0, true);
      },
      { label: `the ownership of conversation "${agentId}"` },
    );
  }

  /** On the loop: the conversation's ownership and pin, as the core records
   * them. `unrecovered`: owned here by an environment that does not
   * recover (`recover: false`, a visitor): its first use recovers nothing
   * (the application calls `env.recover()`), so the recovery the core
   * asks for ends at once and the conversation is ready. */
  private tellOwnership(entry: AgentEntry, here: boolean, facts: number, unrecovered = false): void {
    const { coordinator } = this.host;
    coordinator.apply(M.ConversationOwned, entry.slot, entry.generation, here ? Ownership.Here : Ownership.Elsewhere, facts);
    if (!unrecovered) return;
    const code = coordinator.apply(M.RecoveryRequested, entry.slot, entry.generation, RecoveryCause.FirstUse, 0);
    if (code !== ResultCode.Ok) throw errorForCode(code, { agentId: entry.id });
    const { epoch } = recoveryOrderOf(coordinator.settings.core);
    coordinator.apply(M.RecoveryFinished, entry.slot, entry.generation, epoch, RecoveryOutcome.Recovered);
  }

  /** On the loop: owned here, its recovery asked of the core, which
   * answers with the epoch and the rows to read. A recovery with nothing
   * to read or restore (the scan found no rows, the queue is not read) is
   * finished in the same turn. */
  private requestRecovery(entry: AgentEntry, conversation: Conversation, facts: number, scannedRows: number): FirstRecoveryOrder {
    this.tellOwnership(entry, true, this.ownerFactsOf(conversation));
    const { coordinator } = this.host;
    const code = coordinator.apply(M.RecoveryRequested, entry.slot, entry.generation, conversation.cause, facts);
    if (code !== ResultCode.Ok) throw errorForCode(code, { agentId: entry.id });
    const order = recoveryOrderOf(coordinator.settings.core);
    const nothing = order.rows === RowsPolicy.Nothing || (order.rows === RowsPolicy.FromScan && scannedRows === 0);
    const finished = nothing && !order.readQueue;
    if (finished) coordinator.apply(M.RecoveryFinished, entry.slot, entry.generation, order.epoch, RecoveryOutcome.Recovered);
    return { ...order, finished };
  }

  /** What the core decides the registration's pin from (`OwnerFact`): an
   * agent defined by id. */
  private ownerFactsOf(conversation: Conversation): number {
    return conversation.kind.name === undefined ? OwnerFact.DefinedById : 0;
  }

  /** Runs `body` on the control loop and resolves with what it returned
   * (rejects with what it threw). */
  private onLoop<T>(conversation: Conversation, label: string, body: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.host.loop.post(
        () => {
          let value: T;
          try {
            value = body();
          } catch (error) {
            // A core failure stops the loop, which fails this completion.
            if (error instanceof CoreFailureError) throw error;
            return reject(error);
          }
          resolve(value);
        },
        { completion: { fail: reject }, label },
      );
    });
  }

  /** On the loop: the conversation's core entry (`RegisterAgent`); throws
   * what the core refused it with (AgentsFull). */
  private registerNow(conversation: Conversation): AgentEntry {
    const { coordinator } = this.host;
    const code = coordinator.apply(M.RegisterAgent, 0);
    if (code !== ResultCode.Ok) throw errorForCode(code, { agentId: conversation.id });
    const { core } = coordinator.settings;
    const entry = conversation.register(core.effectWord(0, 1), core.effectWord(0, 2));
    coordinator.registerAgentEntry(entry);
    // The uses counted before the slot existed are the core's now;
    // later ones are told as they come (`countUse`).
    for (let use = 0; use < conversation.users; use += 1) coordinator.apply(M.UseBegin, entry.slot, entry.generation);
    return entry;
  }

  /** One host operation more (1) or less (-1) uses the conversation. The
   * core counts them too (docs/decisions/0062): from its registration on,
   * each is posted to the loop (a use before it is counted at
   * registration); the `UseEnd` of the last one lets the core answer
   * `ReleaseConversation`. */
  private countUse(conversation: Conversation, change: 1 | -1): void {
    conversation.users += change;
    const entry = conversation.entry;
    const { coordinator } = this.host;
    if (entry !== undefined) {
      this.host.loop.post(
        () => {
          coordinator.apply(change > 0 ? M.UseBegin : M.UseEnd, entry.slot, entry.generation);
          // The last use ended: the record is let go of if the conversation is at rest.
          if (conversation.users === 0) this.restIfAtRest(conversation);
        },
        { label: `a use of conversation "${conversation.id}"` },
      );
    }
    if (conversation.failed && conversation.users === 0) this.forgetFailed(conversation);
  }

  /** Where the core's count of a conversation's users differs from this
   * bookkeeping's (for tests: checked once the loop is idle). */
  useDrift(): string[] {
    const drift: string[] = [];
    for (const conversation of this.live.values()) {
      const entry = conversation.entry;
      if (entry === undefined || conversation.failed || this.host.coordinator.agentEntries().indexOf(entry) < 0) continue;
      const counted = this.host.coordinator.settings.core.conversation(entry.slot).users;
      if (counted !== conversation.users) drift.push(`conversation "${conversation.id}": ${conversation.users} use(s) here, ${counted} counted by the core`);
    }
    return drift;
  }

  /** The core's `ReleaseConversation` (inside an apply): the conversation
   * is idle, and its entry is freed on the loop. A use begun since keeps
   * it: counted here at once, its `UseBegin` is posted behind this (the
   * core then counts it and makes the conversation ready again), so the
   * free waits for no use counted here; PurgeAgent refuses one the core
   * counts in use by then. */
  private carryOutRelease(agent: AgentEntry): void {
    const conversation = this.find(agent.id);
    if (conversation === undefined || conversation.entry !== agent) return;
    this.host.loop.post(
      () => {
        if (conversation.users === 0) this.free(conversation);
      },
      { label: `the idle release of conversation "${conversation.id}"` },
    );
  }

  /** A conversation whose first use failed, once its last use ended: it is
   * forgotten, and the next use registers it again (bookkeeping of the
   * map, no decision). A slot its registration got goes back to the core
   * (PurgeAgent, on the loop), which refuses one the failure left an
   * execution or an admission on: that one stays, as before. */
  private forgetFailed(conversation: Conversation): void {
    if (this.live.get(conversation.id) === conversation) this.live.delete(conversation.id);
    this.pending.delete(conversation);
    const entry = conversation.entry;
    if (entry === undefined) return;
    const { coordinator } = this.host;
    this.host.loop.post(
      () => {
        if (coordinator.apply(M.PurgeAgent, entry.slot, entry.generation) === ResultCode.Ok) coordinator.forgetAgentEntry(entry.slot);
      },
      { label: `the slot of conversation "${conversation.id}", whose first use failed` },
    );
  }

  /** `agent.release()` on the loop: the pin is lifted in the core too, and
   * the entry freed now if the core lets it go (PurgeAgent). */
  private unpinAndFree(conversation: Conversation): number {
    const entry = conversation.entry;
    if (entry !== undefined && this.live.get(conversation.id) === conversation) this.host.coordinator.apply(M.SetPinned, entry.slot, entry.generation, 0);
    return this.free(conversation);
  }

  /** PurgeAgent on the loop: Ok frees the slot (the conversation is gone
   * from this process); AgentAdmissionHeld keeps it until its execution
   * is released. */
  private free(conversation: Conversation): number {
    const entry = conversation.entry;
    if (entry === undefined || this.live.get(conversation.id) !== conversation) return ResultCode.Ok;
    const code = this.host.coordinator.apply(M.PurgeAgent, entry.slot, entry.generation);
    if (code !== ResultCode.Ok) return code;
    this.host.coordinator.forgetAgentEntry(entry.slot);
    this.live.delete(conversation.id);
    this.host.conversationFreed(conversation.id);
    const leasing = leasingStoreOf(this.host.store);
    leasing?.releaseLease(conversation.id).catch((error: unknown) => {
      this.host.coordinator.settings.logger.warn(
        `[phronomy] the lease of conversation "${conversation.id}" could not be given up (it expires on its own): ${error instanceof Error ? error.message : String(error)}`,
      );
    });
    return code;
  }

  /** The conversations of a new definition that have unfinished
   * executions (found by the scan) are recovered now. */
  private async recoverDefinition(kind: DefinitionKind): Promise<RecoveredExecution[]> {
    if (!this.host.recovers) {
      // Still take an id-defined agent's lease at definition, as before.
      if (kind.name === undefined && leasingStoreOf(this.host.store) !== undefined) await this.touch(kind.id as string, kind);
      return [];
    }
    const scan = await this.host.unfinishedByAgent();
    const queued = this.host.queuedAtOpen();
    const ids =
      kind.name === undefined
        ? [kind.id as string]
        : [
            ...new Set([
              ...[...scan].filter(([, rows]) => rows.some((row) => row.metadata.config?.["definition"] === kind.name)).map(([agentId]) => agentId),
              ...[...queued].filter(([agentId, name]) => name === kind.name && !this.byId.has(agentId)).map(([agentId]) => agentId),
            ]),
          ];
    const leasing = leasingStoreOf(this.host.store) !== undefined;
    const wanted = ids.filter((agentId) => scan.has(agentId) || queued.has(agentId) || (leasing && kind.name === undefined));
    const reports = await Promise.all(
      wanted.map(async (agentId) => {
        await this.touch(agentId, kind, RecoveryCause.OpenScan);
        const report = this.reports.get(agentId) ?? [];
        this.reports.delete(agentId);
        return report;
      }),
    );
    return reports.flat();
  }

  /** A partition taken over (docs/decisions/0030) holds unfinished work of
   * this conversation: it is prepared here, which reads and recovers it,
   * unless it is live already (the store reported it as a takeover) or
   * its definition is not defined here (its rows wait for it). Its first
   * recovery asks the core as `PartitionTaken`, with the fact that the
   * partition's rows were read when it was taken (`PartitionScanned`). */
  async adopt(agentId: string, definitionName: string | undefined): Promise<void> {
    if (this.live.has(agentId) || this.resting.slotOf(agentId) !== undefined) return;
    const kind = this.kindOf(agentId, definitionName);
    if (kind === undefined) return;
    await this.touch(agentId, kind, RecoveryCause.PartitionTaken);
  }

  /** Recovery reports a definition's recovery has not collected yet. */
  private readonly reports = new Map<string, RecoveredExecution[]>();

  /** Prepares the conversation (registration, lease, recovery) without a
   * start; it is let go afterwards if idle. */
  private async touch(agentId: string, kind: DefinitionKind, cause: FirstRecoveryCause = RecoveryCause.FirstUse): Promise<void> {
    const use = this.use(agentId, kind, cause);
    try {
      await use.entry;
    } finally {
      use.done();
    }
  }
}
