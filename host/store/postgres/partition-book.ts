// What one PostgreSQL store process knows of the partitions it holds
// (docs/decisions/0030), and the tick that renews them, takes its share of
// the free ones and gives surplus ones up. The SQL is `partitions.ts`; the
// store (`../postgres-store.ts`) asks this book, per agent, for fences and
// admissions, exactly as it asked the agent leases of 0010.
//
// Rules kept here:
// * An agent's fence is its partition's: held, or the last one held here
//   (stale: the database refuses it), or epoch 0 (matches no row) for an
//   agent asked for whose partition was never held here. An agent never
//   asked for, in a partition never held here, is unfenced (as in 0010).
// * A process admits for a partition until `admitFraction` of the lease
//   after it *sent* the last successful take or tick (the server's expiry
//   is at least that late).
// * One tick per third of the lease: one statement renews every partition
//   held and reads the table; a second one, only when needed, takes free
//   partitions up to this process's share (`ceil(count / live members)`);
//   a third, only when needed, gives up at most
//   `partitionsReleasedPerTickMax` surplus partitions. Which ones: each
//   process ranks partitions by a hash of (its id, partition), takes the
//   free ones it ranks highest and gives up those it ranks lowest among the
//   idle ones — no execution running here (`hooks.busy`): a partition given
//   up fences what runs in it, and its next owner runs the last barrier's
//   work again (a tool batch called twice). A busy partition is given up
//   only when no idle one was found for `busyReleaseDeferredTicksMax`
//   ticks in a row, so balance is still reached under constant load.
// * Agents asked for (`acquire`) are the conversations live here: when a
//   partition is taken in the background, each of them is reported
//   (`acquired`, recovered as a takeover of 0010), then the partition
//   (`partitionsAcquired`: its other unfinished executions are recovered).
// * `stop` waits for a tick in progress, so no renewal lands after the release.
// * A lease race this process can resolve itself is waited for, not
//   refused (docs/decisions/0055): a start on a partition held here whose
//   renewal is late, or lapsed here and taken back at the next tick, waits
//   (`settling`) for the next tick to answer; an `acquire` whose take found
//   the partition already this process's (its own tick took it meanwhile)
//   waits for that tick too, and never names this process as the holder.

import type pg from "pg";
import type { PhronomyError } from "../../errors.js";
import * as leases from "./leases.js";
import type { Fence } from "./leases.js";
import * as partitions from "./partitions.js";
import { homeConversations, type HomeOutcome, type MoveAsked } from "./homes.js";
import { startTiming } from "../start-timing.js";
import { setNewest } from "../newest.js";

/** No partition row has epoch 0 once held (takes start at 1): the fence of
 * an agent asked for whose partition was never held here. */
const neverHeldEpoch = 0;

interface PartitionState {
  /** The grant held now, or the last one held (stale once lost). */
  grant: partitions.PartitionGrant | undefined;
  held: boolean;
  /** `performance.now()` when the take of the epoch held was answered. */
  heldSince: number;
  /** `performance.now()` after which admissions stop unless renewed. */
  admitUntil: number;
  /** Why it is not held: the owner seen, a failed renewal. */
  why: string;
  /** Not held here: last seen expired under this process's own lease (it
   * lapsed while the database was away), which this process takes back. */
  lapsedHere: boolean;
  details: Record<string, unknown>;
  /** Its unfinished executions were read (or are covered by the
   * environment's open scan): conversations need no read of their own. */
  scanned: boolean;
}

export interface PartitionBookHooks {
  /** A partition was taken in the background: an agent asked for in it. */
  readonly acquired: (agentId: string, grant: leases.LeaseGrant) => void;
  /** Partitions taken in the background (after `acquired` for their agents). */
  readonly partitionsAcquired: (grants: readonly partitions.PartitionGrant[]) => void;
  /** A partition held here was lost (taken over, expired, a write fenced)
   * or given up by balancing: the agents asked for in it. */
  readonly lost: (agentIds: readonly string[]) => void;
  readonly afterPass: () => Promise<void>;
  readonly closing: () => boolean;
  /** The partitions with an execution running here (admitted, not yet
   * suspended or ended): given up last (see the header). */
  readonly busy: () => ReadonlySet<number>;
}

/** How much of a lease the holder's expiry must still run, in the last
 * tick's view, for an `acquire` to take the view's word that another
 * process holds the partition (no take, no read of the holder: two round
 * trips a start filed for its owner no longer pays, docs/decisions/0068).
 * A live holder renews every third of a lease, so its expiry is always at
 * least ⅔ of a lease ahead, and the view is a third of a lease old at most
 * (one tick): a sixth is always cleared by a live holder and leaves a sixth
 * of a lease of slack for a late tick. */
export const viewMarginFraction = 1 / 6;

/** Ticks in a row a surplus is kept because every surplus candidate was
 * busy, before busy ones are given up (≈ 3 leases). */
export const busyReleaseDeferredTicksMax = 9;

/** Agents whose natural partition is remembered (`naturalPartitionOf`):
 * a run asks for its conversation's partition about 25 times (its
 * fence, its group's order, its lease, its admission), each an MD5 of the
 * id; the runs in flight of a busy process fit many times over, and 4,096
 * short ids are a few hundred KB at most. The oldest goes first. */
export const naturalPartitionsMax = 4_096;

export class PartitionBook {
  private readonly states: PartitionState[];
  /** Agent id → `partitions.partitionOf(id, count)`, the latest asked for
   * (at most `naturalPartitionsMax`): the same answer, an MD5 fewer. */
  private readonly naturalPartitions = new Map<string, number>();
  /** Agents asked for (conversations live here) → their partition. */
  private readonly asked = new Map<string, number>();
  /** The last tick's view of the table, for refusals and taking on demand. */
  private seen: partitions.Tick | undefined;
  private seenAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private passing: Promise<void> | undefined;
  private stopped = false;
  /** Waiting for this process's own tick (`nextTick`). */
  private tickWaiters: (() => void)[] = [];

  /** The moves asked in this event-loop round, sent together (`moveInBatch`). */
  private readonly movesAsked = new Map<
    string,
    {
      readonly move: MoveAsked;
      readonly waitMs: number;
      readonly answer: Promise<HomeOutcome>;
      resolve(answer: HomeOutcome): void;
      reject(error: unknown): void;
    }
  >();

  constructor(
    private readonly pool: pg.Pool,
    /** The connection the tick runs on (its own, so it never waits behind
     * the pool's writes); the pool when it is gone. */
    private readonly session: () => pg.ClientBase | undefined,
    readonly owner: string,
    readonly leaseMs: number,
    readonly count: number,
    private readonly hooks: PartitionBookHooks,
    /** false: a process that takes no share (a CLI command): it is no
     * member, takes partitions only for agents it asks for (on demand, and
     * again in the background while they are held elsewhere), and gives
     * nothing up but on close. */
    private readonly balancing = true,
    /** Where this process tells the others of the partitions it gives up
     * (`partitions.release`), undefined: nowhere. */
    private readonly releasedChannel: string | undefined = undefined,
  ) {
    this.states = Array.from({ length: count }, () => ({
      grant: undefined,
      held: false,
      heldSince: 0,
      admitUntil: 0,
      why: "its partition is not held here",
      lapsedHere: false,
      details: {},
      scanned: false,
    }));
  }

  /** The partition of each conversation moved out of its own
   * (`conversation_homes`, docs/decisions/0101) that this process knows of:
   * moved here, read at a takeover's scan, or learnt from a refused write. */
  private readonly homes = new Map<string, number>();
  /** Moves noted by `moveWithPreparation`, their preparation not answered yet. */
  private readonly movesPending = new Map<string, MoveAsked>();
  /** Conversations this process moved here, with the epoch of the home
   * partition the move was fenced by: nothing of them anywhere then, and
   * nobody else can write them while that epoch is held here. */
  private readonly moved = new Map<string, number>();

  partitionOf(agentId: string): number {
    return this.homes.get(agentId) ?? this.naturalPartitionOf(agentId);
  }

  /** The partition the id hashes to, whatever its home (docs/decisions/0114:
   * the MD5 was 6% of the calling thread's busy time at 100 in flight). */
  private naturalPartitionOf(agentId: string): number {
    const known = this.naturalPartitions.get(agentId);
    if (known !== undefined) return known;
    const partition = partitions.partitionOf(agentId, this.count);
    setNewest(this.naturalPartitions, agentId, partition, naturalPartitionsMax);
    return partition;
  }

  /** The conversation lives in `partition` (its home: a home never moves;
   * it goes only with the conversation's last row, `forgetHome`). */
  noteHome(agentId: string, partition: number): void {
    if (!Number.isInteger(partition) || partition < 0 || partition >= this.count) return;
    if (partition === this.naturalPartitionOf(agentId)) return;
    this.homes.set(agentId, partition);
    if (this.asked.has(agentId)) this.asked.set(agentId, partition);
  }

  /** The conversation's home this process noted is gone (pruned once the
   * conversation had nothing left anywhere, docs/decisions/0112): it lives
   * in its natural partition again. */
  forgetHome(agentId: string): void {
    this.movesPending.delete(agentId);
    if (!this.homes.delete(agentId)) return;
    this.moved.delete(agentId);
    if (this.asked.has(agentId)) this.asked.set(agentId, this.naturalPartitionOf(agentId));
  }

  /** Moved here by this process (or its move on its way with its
   * preparation), and its home still held at the move's epoch. */
  movedHere(agentId: string): boolean {
    const epoch = this.moved.get(agentId);
    if (epoch === undefined) return false;
    if (this.heldAt(agentId, epoch)) return true;
    this.moved.delete(agentId);
    this.cancelMove(agentId);
    return false;
  }

  /** `TakeHere` carried out by the conversation's next preparation
   * (docs/decisions/0119): no statement now. The partition it goes to (a
   * live one held here, as `homeHere` picks) is noted as its home at once
   * — its fence, its group's order — and the move travels inside the
   * preparation's transaction (`movingPrepareStatement`), whose answer is
   * the move's (`moveAnswered`). False, noting nothing: a home is known
   * already (the start is then placed by it), or nothing is held here live. */
  moveWithPreparation(agentId: string): boolean {
    if (this.homes.has(agentId)) return false;
    const now = performance.now();
    const live = this.states.flatMap((state) => (state.held && now < state.admitUntil && state.grant !== undefined ? [state.grant] : []));
    if (live.length === 0) return false;
    const target = live[partitions.partitionOf(agentId, live.length)]!;
    if (target.partition === this.naturalPartitionOf(agentId)) return false;
    startTiming.phase(agentId, "moving");
    this.movesPending.set(agentId, { agentId, partition: target.partition, epoch: target.epoch });
    this.noteHome(agentId, target.partition);
    this.moved.set(agentId, target.epoch);
    startTiming.phase(agentId, "moved");
    return true;
  }

  /** The move the conversation's next preparation carries, if one is
   * pending and its partition is still held at the move's epoch (else it
   * is dropped: the preparation goes by the natural fence, which refuses it). */
  pendingMoveOf(agentId: string): MoveAsked | undefined {
    const move = this.movesPending.get(agentId);
    if (move === undefined || this.movedHere(agentId)) return move;
    return undefined;
  }

  /** The preparation that carried the move answered: `livesIn` undefined,
   * moved (or homed here before: the preparation ran); else the move was
   * refused and the conversation lives in `livesIn` (its natural
   * partition, or the home another process gave it), noted. */
  moveAnswered(agentId: string, livesIn: number | undefined): void {
    if (!this.movesPending.delete(agentId) || livesIn === undefined) return;
    this.forgetHome(agentId);
    this.noteHome(agentId, livesIn);
  }

  /** A pending move dropped unanswered (its preparation failed, or was
   * never sent): the conversation's home is not known to be made. */
  cancelMove(agentId: string): void {
    if (this.movesPending.delete(agentId)) this.forgetHome(agentId);
  }

  /** A conversation's home this process knows of (undefined: none known). */
  homeOf(agentId: string): number | undefined {
    return this.homes.get(agentId);
  }

  /** Asks the database to move a conversation that has nothing anywhere
   * into a partition held here, live (one statement; docs/decisions/0101).
   * Undefined when no partition is held here in its admission window. A
   * move, or a home found, is noted: its fence is then that partition's. */
  async homeHere(agentId: string, waitMs: number): Promise<HomeOutcome | undefined> {
    const now = performance.now();
    const live = this.states.flatMap((state) => (state.held && now < state.admitUntil && state.grant !== undefined ? [state.grant] : []));
    if (live.length === 0) return undefined;
    const target = live[partitions.partitionOf(agentId, live.length)]!;
    startTiming.phase(agentId, "moving");
    const answer = await this.moveInBatch({ agentId, partition: target.partition, epoch: target.epoch }, waitMs);
    startTiming.phase(agentId, "moved");
    if (answer.outcome !== "refused") this.noteHome(agentId, answer.partition);
    if (answer.outcome === "moved") this.moved.set(agentId, target.epoch);
    return answer;
  }

  /** The moves asked in one event-loop round leave together, as one
   * statement (docs/decisions/0113): starts that arrive together go on
   * together to their preparations, which then share a group commit. One
   * move of a conversation per batch (a second start of it shares it). */
  private moveInBatch(move: MoveAsked, waitMs: number): Promise<HomeOutcome> {
    const same = this.movesAsked.get(move.agentId);
    if (same !== undefined) return same.answer;
    let settle!: { resolve: (answer: HomeOutcome) => void; reject: (error: unknown) => void };
    const answer = new Promise<HomeOutcome>((resolve, reject) => {
      settle = { resolve, reject };
    });
    this.movesAsked.set(move.agentId, { move, waitMs, answer, ...settle });
    if (this.movesAsked.size === 1) setImmediate(() => this.sendMoves());
    return answer;
  }

  private sendMoves(): void {
    const batch = [...this.movesAsked.values()];
    this.movesAsked.clear();
    if (batch.length === 0) return;
    const waitMs = Math.min(...batch.map((asked) => asked.waitMs));
    homeConversations(
      this.pool,
      this.owner,
      batch.map((asked) => asked.move),
      waitMs,
    ).then(
      (answers) => batch.forEach((asked, index) => asked.resolve(answers[index]!)),
      (error: unknown) => {
        for (const asked of batch) asked.reject(error);
      },
    );
  }

  /** Joins: reclaims this instance's partitions (instant reclaim), takes its
   * share of the free ones, and starts the tick. Partitions taken here are
   * covered by the environment's open scan. */
  async start(reclaimedNow: (reclaimed: readonly partitions.PartitionGrant[]) => void = () => undefined): Promise<partitions.PartitionGrant[]> {
    const sentAt = performance.now();
    const reclaimed = await partitions.reclaim(this.pool, this.owner, this.leaseMs);
    for (const grant of reclaimed) this.note(grant, sentAt, true);
    reclaimedNow(reclaimed);
    await this.pass(false);
    this.schedule();
    return reclaimed;
  }

  /** The partitions held now. */
  heldPartitions(): partitions.PartitionGrant[] {
    return this.states.flatMap((state) => (state.held && state.grant !== undefined ? [state.grant] : []));
  }

  /** The agents asked for. */
  agents(): string[] {
    return [...this.asked.keys()];
  }

  fenceOf(agentId: string): Fence | undefined {
    const partition = this.partitionOf(agentId);
    const grant = this.states[partition]!.grant;
    if (grant !== undefined) return { owner: grant.owner, epoch: grant.epoch };
    return this.asked.has(agentId) ? { owner: this.owner, epoch: neverHeldEpoch } : undefined;
  }

  /** The grant held on the agent's partition now (and not past its
   * admission time), as the agent's lease. */
  leaseOf(agentId: string): leases.LeaseGrant | undefined {
    const state = this.states[this.partitionOf(agentId)]!;
    return state.held && performance.now() < state.admitUntil ? state.grant : undefined;
  }

  /** The agent's partition is held here (its admission window may have
   * lapsed until the next renewal). */
  holdsPartitionOf(agentId: string): boolean {
    return this.states[this.partitionOf(agentId)]!.held;
  }

  /** The agent's partition is not held here and was last seen expired
   * under this process's own lease (it lapsed while the database was
   * away): nobody else holds it, this process takes it back at its next
   * tick, and a start is not filed in the inbox for it — it would be filed
   * to this process itself (docs/decisions/0058). */
  lapsedHere(agentId: string): boolean {
    const state = this.states[this.partitionOf(agentId)]!;
    return !state.held && state.lapsedHere;
  }

  /** What a start of the agent waits for before it is judged: the next
   * tick, when the agent's partition is held here but its renewal is late,
   * or lapsed here (this process takes it back at that tick); an on-demand
   * take of it in flight. Undefined when there is no lease race this
   * process resolves itself (held in time, or held elsewhere). */
  settling(agentId: string): Promise<void> | undefined {
    if (this.stopped || this.hooks.closing()) return undefined;
    const partition = this.partitionOf(agentId);
    const taking = this.taking.get(partition);
    if (taking !== undefined)
      return taking.done.then(
        () => undefined,
        () => undefined,
      );
    return this.racingItself(agentId) ? this.untilSettled(agentId, performance.now() + this.settleWaitMsMax) : undefined;
  }

  /** Held here with its renewal late, or lapsed here: the next tick of
   * this process settles it. */
  private racingItself(agentId: string): boolean {
    const state = this.states[this.partitionOf(agentId)]!;
    return (state.held && performance.now() >= state.admitUntil) || this.lapsedHere(agentId);
  }

  /** Ticks until the race is settled, or until `deadline`: a tick sent
   * before the wait began may renew with a window already past. */
  private async untilSettled(agentId: string, deadline: number): Promise<void> {
    while (!this.stopped && this.racingItself(agentId) && performance.now() < deadline) await this.nextTick();
  }

  /** Resolves once the tick in progress, or else the next one, has
   * answered (its renewals and takes noted), or after `settleWaitMsMax`,
   * or at `stop`. */
  private nextTick(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.settleWaitMsMax);
      timer.unref();
      this.tickWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** How long a start or an acquire waits for this process's own tick: one
   * lease (three ticks), then it is judged as things are (refused, as
   * before this wait existed). */
  private get settleWaitMsMax(): number {
    return this.leaseMs;
  }

  private wakeTickWaiters(waiters: readonly (() => void)[]): void {
    for (const wake of waiters) wake();
  }

  /** The epoch the agent's partition is held at here (renewed in time or
   * not), or undefined when it is not held. */
  heldEpoch(agentId: string): number | undefined {
    const state = this.states[this.partitionOf(agentId)]!;
    return state.held ? state.grant?.epoch : undefined;
  }

  /** The agent's partition is held here at this epoch (renewed or not
   * yet: a partition once lost here is never held again at the same
   * epoch, so false is final for that epoch). */
  heldAt(agentId: string, epoch: number): boolean {
    const state = this.states[this.partitionOf(agentId)]!;
    return state.held && state.grant?.epoch === epoch;
  }

  /** The agent's partition's unfinished executions were read here at this
   * epoch, so the agent needs no read of its own. */
  scanned(agentId: string): boolean {
    const state = this.states[this.partitionOf(agentId)]!;
    return state.held && state.scanned;
  }

  /** When the agent's partition was taken at the epoch held now (held
   * ever since); undefined when it is not held, or its admission window
   * has lapsed: a process stopped (SIGSTOP) past its lease still believes
   * it holds partitions others took meanwhile, until its next tick. Within
   * the window, every renewal since the take succeeded (a failed one loses
   * the partition), so it never expired and nobody else wrote in it. */
  heldSince(agentId: string): number | undefined {
    const state = this.states[this.partitionOf(agentId)]!;
    return state.held && performance.now() < state.admitUntil ? state.heldSince : undefined;
  }

  /** Marks partitions read (after a takeover's recovery read them). */
  markScanned(grants: readonly partitions.PartitionGrant[]): void {
    for (const grant of grants) {
      const state = this.states[grant.partition]!;
      if (state.grant?.epoch === grant.epoch) state.scanned = true;
    }
  }

  /** The agent's lease: its partition's grant when held here (no write);
   * a free or expired partition is taken on demand (one statement); a
   * partition another live process holds is refused, naming it. */
  async acquire(agentId: string, fromView = false): Promise<leases.LeaseAcquisition> {
    const partition = this.partitionOf(agentId);
    this.asked.set(agentId, partition);
    const held = this.leaseOf(agentId);
    if (held !== undefined) return { acquired: true, ...held };
    // `fromView` (a start that can be filed for the holder, releases
    // heard): held by another live process with a lease well ahead in the
    // tick's view, that is the answer, without a statement
    // (docs/decisions/0068).
    const seenElsewhere = fromView ? this.heldElsewhereInView(partition) : undefined;
    if (seenElsewhere !== undefined) return this.ownedElsewhere(partition, seenElsewhere);
    // The tick's view may be a third of a lease old: the database decides
    // (the take changes only a free or expired row).
    if (!this.stopped && !this.hooks.closing()) {
      const grant = await this.takeOnDemand(partition, agentId);
      if (grant !== undefined) return { acquired: true, owner: grant.owner, epoch: grant.epoch, expiresAt: grant.expiresAt };
    }
    let holder = await partitions.holderOf(this.pool, agentId);
    if (holder?.owner === this.owner) {
      // Taken by this process's own tick at the same moment: its answer
      // is noted at the end of that tick (or the next one renews it).
      await this.nextTick();
      const taken = this.leaseOf(agentId);
      if (taken !== undefined) return { acquired: true, ...taken };
      holder = await partitions.holderOf(this.pool, agentId);
      if (holder?.owner === this.owner) return this.notConfirmed(partition, holder);
    }
    return this.ownedElsewhere(partition, { owner: holder?.owner ?? "(nobody)", epoch: holder?.epoch ?? 0, expiresAt: holder?.expiresAt ?? 0 });
  }

  /** The refusal of an `acquire` for a partition another process holds
   * (or nobody: `(nobody)`), noted for the start's refusal. */
  private ownedElsewhere(partition: number, holder: { readonly owner: string; readonly epoch: number; readonly expiresAt: number }): leases.LeaseAcquisition {
    const { owner, epoch, expiresAt } = holder;
    const state = this.states[partition]!;
    if (!state.held) state.lapsedHere = false;
    state.why = `its partition ${partition} is held by ${owner} until ${new Date(expiresAt).toISOString()}`;
    state.details = { partition, owner, epoch, expiresAt };
    return { acquired: false, owner, epoch, expiresAt, message: `partition ${partition} is held by ${owner} until ${new Date(expiresAt).toISOString()}` };
  }

  /** The holder `acquire(agentId, true)` would answer from the view now. */
  holderInView(agentId: string): { readonly owner: string } | undefined {
    return this.heldElsewhereInView(this.partitionOf(agentId));
  }

  /** The partition's holder in the last tick's view, when that is another
   * process whose lease still runs `viewMarginFraction` of a lease past
   * now (the view's age counted from when its tick was sent, so the
   * margin errs short): a holder renews every third of a lease, so a live
   * one always clears it, and a dead or departing one does not once its
   * expiry comes near. Undefined — ask the database — when the partition
   * is held or being taken here, or the view says otherwise. */
  private heldElsewhereInView(partition: number): { readonly owner: string; readonly epoch: number; readonly expiresAt: number } | undefined {
    const seen = this.seen;
    if (seen === undefined || this.stopped || this.states[partition]!.held || this.taking.has(partition)) return undefined;
    // Given up since the view's tick was sent (heard on the released
    // channel), or a release may have gone unheard since: the database decides.
    const releasedAt = this.releasedHeard.get(partition);
    if ((releasedAt !== undefined && releasedAt >= this.seenAt) || this.deafSince >= this.seenAt) return undefined;
    const row = seen.partitions[partition];
    if (row === undefined || row.owner === "" || row.owner === this.owner) return undefined;
    const nowInView = seen.now + (performance.now() - this.seenAt);
    if (row.expiresAt - nowInView < this.leaseMs * viewMarginFraction) return undefined;
    return { owner: row.owner, epoch: row.epoch, expiresAt: row.expiresAt };
  }

  /** The database names this process as the partition's holder, but no
   * take or renewal of it has answered here (its answer lost): not held
   * until it expires and is taken again. Never reported as another owner. */
  private notConfirmed(partition: number, holder: { readonly epoch: number; readonly expiresAt: number }): leases.LeaseAcquisition {
    const until = new Date(holder.expiresAt).toISOString();
    const message =
      `partition ${partition} is held by this process (${this.owner}) at epoch ${holder.epoch} in the database, `
      + "but no take of it has answered here; "
      + `it is taken again once that lease expires (${until})`;
    return { acquired: false, owner: this.owner, epoch: holder.epoch, expiresAt: holder.expiresAt, message };
  }

  /** Takes a free partition for the agents asking for it now (one
   * statement however many ask at once); the agents asked for before,
   * refused then, are reported as taken over. */
  private takeOnDemand(partition: number, agentId: string): Promise<partitions.PartitionGrant | undefined> {
    let taking = this.taking.get(partition);
    if (taking === undefined) {
      const waiting = new Set<string>();
      const sentAt = performance.now();
      const done = partitions
        .take(this.pool, this.owner, [partition], this.leaseMs)
        .then(([grant]) => {
          if (grant === undefined || this.stopped) return undefined;
          this.note(grant, sentAt, false);
          this.announce([grant], waiting);
          return grant;
        })
        .finally(() => this.taking.delete(partition));
      taking = { waiting, done };
      this.taking.set(partition, taking);
    }
    taking.waiting.add(agentId);
    return taking.done;
  }

  /** On-demand takes in flight, by partition, with the agents waiting. */
  private readonly taking = new Map<number, { readonly waiting: Set<string>; readonly done: Promise<partitions.PartitionGrant | undefined> }>();

  /** The agent is no longer live here (nothing to write: its partition
   * stays held). */
  forget(agentId: string): boolean {
    this.moved.delete(agentId);
    return this.asked.delete(agentId);
  }

  /** The database refused a write of the agent at `epoch`: its partition
   * is lost (if that is the epoch held). */
  noteLost(agentId: string, epoch: unknown): boolean {
    const state = this.states[this.partitionOf(agentId)]!;
    if (state.grant === undefined || state.grant.epoch !== epoch) return false;
    this.lose(this.partitionOf(agentId), `its partition at epoch ${String(epoch)} was lost (taken over by another process, or expired)`);
    return true;
  }

  admissionRefusal(agentId: string): PhronomyError | undefined {
    const partition = this.partitionOf(agentId);
    const state = this.states[partition]!;
    if (!this.asked.has(agentId) && state.grant === undefined) return undefined;
    if (state.held && performance.now() < state.admitUntil) return undefined;
    const tickMs = Math.floor(this.leaseMs / 3);
    if (!state.held && state.lapsedHere) return leases.partitionLapsedHere(agentId, partition, { ...state.details, thisProcess: this.owner }, tickMs);
    const why = state.held ? `its partition's lease could not be renewed in time (${state.why})` : state.why;
    return leases.agentOwnedElsewhere(agentId, why, { partition, ...state.details, thisProcess: this.owner });
  }

  /** Stops the tick (waiting for one in progress); returns the partitions
   * held, now marked not held, for the caller to release. */
  async stop(): Promise<partitions.PartitionGrant[]> {
    this.stopped = true;
    this.wakeTickWaiters(this.tickWaiters.splice(0));
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.passing;
    const held = this.heldPartitions();
    for (const state of this.states) state.held = false;
    return held;
  }

  private note(grant: partitions.PartitionGrant, sentAt: number, scanned: boolean): void {
    const state = this.states[grant.partition]!;
    // A grant at a new epoch (note is called once its take was answered);
    // the same epoch noted again keeps its time.
    if (!state.held || state.grant?.epoch !== grant.epoch) state.heldSince = performance.now();
    state.grant = grant;
    state.held = true;
    state.scanned = scanned;
    state.admitUntil = sentAt + this.leaseMs * leases.admitFraction;
  }

  private lose(partition: number, why: string): void {
    const state = this.states[partition]!;
    state.held = false;
    state.scanned = false;
    state.why = why;
    state.lapsedHere = false;
    state.details = { epoch: state.grant?.epoch };
    const agentIds = [...this.asked].filter(([, asked]) => asked === partition).map(([agentId]) => agentId);
    if (agentIds.length > 0) this.hooks.lost(agentIds);
  }

  /** Reports partitions taken after the start: the agents asked for in
   * them first (in this turn, the one their admissions open in: the
   * runtime notes each takeover before any start is judged), then the
   * partitions. `except`: the agents whose `acquire` took it. */
  private announce(grants: readonly partitions.PartitionGrant[], except?: ReadonlySet<string>): void {
    const taken = new Map(grants.map((grant) => [grant.partition, grant]));
    for (const [agentId, partition] of this.asked) {
      const grant = taken.get(partition);
      if (grant !== undefined && except?.has(agentId) !== true) this.hooks.acquired(agentId, grant);
    }
    this.hooks.partitionsAcquired(grants);
  }

  /** Partitions another process gave up, heard on the released channel
   * (`performance.now()` when heard): the view of a tick sent before that
   * is not taken at its word for them. At most `count` entries. */
  private readonly releasedHeard = new Map<number, number>();
  /** When the store last could not hear releases (its listener
   * reconnected): views of ticks sent before are not taken at their word. */
  private deafSince = 0;

  /** Another process gave these partitions up (its release told them). */
  heardReleased(partitions: readonly number[]): void {
    const at = performance.now();
    for (const partition of partitions) if (Number.isInteger(partition) && partition >= 0 && partition < this.count) this.releasedHeard.set(partition, at);
  }

  /** Releases may have gone unheard until now (the listener was down). */
  deafUntilNow(): void {
    this.deafSince = performance.now();
  }

  /** This process's preference for a partition (rendezvous hashing: a
   * stable pseudo-random rank per process and partition). */
  private rank(partition: number): number {
    let rank = this.ranks.get(partition);
    if (rank === undefined) {
      rank = partitions.partitionOf(`${this.owner}#${partition}`, 0x7fffffff);
      this.ranks.set(partition, rank);
    }
    return rank;
  }

  private readonly ranks = new Map<number, number>();
  /** Ticks in a row a surplus was kept because its partitions were busy. */
  private releaseDeferredTicks = 0;

  private schedule(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setTimeout(
      () => {
        this.passing = this.pass(true)
          .catch(() => undefined)
          .finally(() => {
            this.passing = undefined;
            this.timer = undefined;
            this.schedule();
          });
      },
      Math.max(1, Math.floor(this.leaseMs / 3)),
    );
    this.timer.unref();
  }

  /** One tick: renew and read; take up to the share; give surplus up. */
  private async pass(announce: boolean): Promise<void> {
    if (this.stopped) return;
    // Those waiting are answered once this tick's renewals and takes are
    // noted (before the inbox poll after it); later ones by the next.
    let answered = false;
    try {
      answered = await this.renewAndBalance(announce);
    } finally {
      this.wakeTickWaiters(this.tickWaiters.splice(0));
    }
    if (answered) await this.hooks.afterPass();
  }

  /** The tick's statements; false when the database did not answer. */
  private async renewAndBalance(announce: boolean): Promise<boolean> {
    const sentAt = performance.now();
    let seen: partitions.Tick;
    try {
      const held = this.heldPartitions().map((grant) => ({ partition: grant.partition, epoch: grant.epoch }));
      seen = await partitions.tick(this.session() ?? this.pool, this.owner, held, this.leaseMs, this.balancing);
    } catch (error) {
      // Unreachable: admissions stop at admitUntil; the next tick retries.
      for (const state of this.states) if (state.held) state.why = `the partition lease could not be renewed: ${messageOf(error)}`;
      return false;
    }
    this.seen = seen;
    this.seenAt = sentAt;
    for (const [partition, heardAt] of this.releasedHeard) if (heardAt < sentAt) this.releasedHeard.delete(partition);
    for (const row of seen.partitions) this.noteRow(row, sentAt, seen.now);
    if (!this.stopped && !this.hooks.closing()) await this.balance(seen, announce);
    return true;
  }

  private noteRow(row: partitions.PartitionRow, sentAt: number, now: number): void {
    const state = this.states[row.partition]!;
    if (state.held && state.grant !== undefined) {
      if (row.renewed) {
        state.grant = { ...state.grant, expiresAt: row.expiresAt };
        state.admitUntil = sentAt + this.leaseMs * leases.admitFraction;
        return;
      }
      this.lose(row.partition, `its partition ${row.partition} at epoch ${state.grant.epoch} was lost (now ${row.owner || "nobody"} at epoch ${row.epoch})`);
    }
    if (state.held) return;
    state.details = { owner: row.owner, epoch: row.epoch, expiresAt: row.expiresAt };
    state.lapsedHere = row.owner === this.owner && row.expiresAt <= now;
    state.why = `its partition ${row.partition} is held by ${row.owner || "nobody"} until ${new Date(row.expiresAt).toISOString()}`;
  }

  private async balance(seen: partitions.Tick, announce: boolean): Promise<void> {
    if (!this.balancing) return this.takeAsked(seen);
    const share = Math.ceil(this.count / Math.max(1, seen.members));
    const heldCount = this.states.filter((state) => state.held).length;
    if (heldCount < share) {
      // The free partitions this process ranks highest: joiners taking at
      // once rank them differently, so they rarely ask for the same ones.
      const free = seen.partitions.filter((row) => row.expiresAt <= seen.now && !this.states[row.partition]!.held).map((row) => row.partition);
      const wanted = free.sort((a, b) => this.rank(b) - this.rank(a)).slice(0, share - heldCount);
      // A take's window counts from its own sending, not the tick's: the
      // tick's statement may have been answered long before (load).
      const sentAt = performance.now();
      const taken = await partitions.take(this.pool, this.owner, wanted, this.leaseMs).catch(() => []);
      if (this.stopped) return;
      for (const grant of taken) this.note(grant, sentAt, !announce);
      if (announce && taken.length > 0) this.announce(taken);
      return;
    }
    if (heldCount > share) await this.releaseSurplus(Math.min(heldCount - share, partitions.partitionsReleasedPerTickMax));
  }

  /** Not balancing: takes the expired partitions of agents asked for. */
  private async takeAsked(seen: partitions.Tick): Promise<void> {
    const wanted = [...new Set(this.asked.values())].filter((partition) => !this.states[partition]!.held && seen.partitions[partition]!.expiresAt <= seen.now);
    if (wanted.length === 0) return;
    const sentAt = performance.now();
    const taken = await partitions.take(this.pool, this.owner, wanted, this.leaseMs).catch(() => []);
    if (this.stopped) return;
    for (const grant of taken) this.note(grant, sentAt, false);
    if (taken.length > 0) this.announce(taken);
  }

  /** Gives up the `count` idle partitions this process ranks lowest; their
   * admissions stop before the statement is sent. Executions running in
   * them are fenced at their next write and recovered by the next owner:
   * busy ones are given up only after `busyReleaseDeferredTicksMax` ticks
   * found too few idle ones (work must still spread under constant load). */
  private async releaseSurplus(count: number): Promise<void> {
    const held = this.heldPartitions().sort((a, b) => this.rank(a.partition) - this.rank(b.partition));
    const busy = this.hooks.busy();
    let chosen = held.filter((grant) => !busy.has(grant.partition)).slice(0, count);
    if (chosen.length < count && ++this.releaseDeferredTicks > busyReleaseDeferredTicksMax) chosen = held.slice(0, count);
    if (chosen.length === count) this.releaseDeferredTicks = 0;
    if (chosen.length === 0) return;
    for (const grant of chosen) this.lose(grant.partition, `its partition ${grant.partition} was given to another process (balance)`);
    await partitions.release(this.pool, this.owner, chosen, this.releasedChannel).catch(() => undefined);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
