// The recoveries of an environment's agents (SPEC §6.2): the one scan of
// unfinished executions each definition recovers its own from
// (docs/decisions/0024), `env.recover()`, and the recovery of an agent taken
// over from an expired lease or taken back after a fenced write. How one
// execution is continued is `recovery.ts`'s; this decides which rows, when,
// and what a store failure left held is released first.
//
// Rules kept: the unfinished rows are read once per recovery pass; an agent
// taken over admits no start until its recovery ends (`admissionGate`); a
// decision filed for it waits for the same.

import { MessageKind as M, ResultCode } from "../../assembly/abi.js";
import { resultCodeName } from "../core/names.js";
import type { PhronomyError } from "../errors.js";
import type { ExecutionStore } from "../store/store.js";
import type { ExecutionRow } from "../store/records.js";
import { queueReaderOf, queueStoreOf } from "../store/queue.js";
import type { ControlLoop } from "./control-loop.js";
import type { Coordinator } from "./coordinator.js";
import type { Conversations } from "./conversations.js";
import type { ConversationQueues } from "./conversation-queue.js";
import type { InboxApplier } from "./approval-inbox.js";
import type { AgentEntry } from "./requests.js";
import { continuationNameOf, continuationOf, recoverAgent, type RecoveredExecution } from "./recovery.js";
import { KeyedRetries } from "./keyed-retries.js";
import { heldEpochOf, leasingStoreOf } from "./leases.js";

/** What the recoveries use of their environment. */
export interface AgentRecoveriesHost {
  readonly store: ExecutionStore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  readonly conversations: Conversations;
  readonly queues: ConversationQueues;
  /** Recover each agent when it is defined and when it is taken over
   * (`Phronomy.open`'s `recover`). */
  readonly recoverOnDefine: boolean;
  /** Whether the environment's `close()` was called. */
  closed(): boolean;
  /** The approval inbox's applier, once opened: decisions filed for an
   * agent wait while it recovers. */
  inboxApplier(): InboxApplier | undefined;
}

/** Every recovery an environment runs, and the report of each agent's. */
export class AgentRecoveries {
  /** Each agent's recovery report (`env.recovery(agentId)`). */
  private readonly reports = new Map<string, Promise<RecoveredExecution[]>>();
  /** Recoveries after a takeover still running: starts wait for them. */
  private readonly takeoverRecoveries = new Map<string, Promise<RecoveredExecution[]>>();
  /** Agents whose last recovery found an execution held here whose
   * abandoned session still had operations in flight (NotQuiescent). */
  private readonly settling = new Set<string>();
  /** The heals scheduled (`healLater`): 250 ms, doubling to 5 s. */
  private readonly heals = new KeyedRetries(250, 5_000);

  constructor(private readonly host: AgentRecoveriesHost) {}

  /** The recovery report of an agent defined in this environment. */
  recovery(agentId: string): Promise<RecoveredExecution[]> {
    return this.reports.get(agentId) ?? Promise.resolve([]);
  }

  /** Notes the agent's recovery report (its definition's, a takeover's). */
  report(agentId: string, recovered: Promise<RecoveredExecution[]>): void {
    this.reports.set(agentId, recovered);
  }

  /** Recovers the unfinished executions of every defined agent (SPEC §6.2)
   * and reports each one; executions of agents not defined here are
   * reported as waiting for their agent. */
  async recover(): Promise<RecoveredExecution[]> {
    await this.host.conversations.definitionsSettled();
    this.unfinished = undefined;
    const report: RecoveredExecution[] = [];
    const leasing = leasingStoreOf(this.host.store);
    // Conversations live here: their unfinished rows, and what a store
    // failure left held for them.
    for (const agentId of this.host.conversations.liveIds()) {
      await this.host.conversations.liveEntry(agentId)?.catch(() => undefined);
      if (leasing && leasing.leaseOf(agentId) === undefined) continue;
      const recovered = (await this.oneAtATime(agentId, () => this.host.conversations.holding(agentId, (entry) => this.recoverAgentEntry(entry)))) ?? [];
      report.push(...recovered);
      if (recovered.some((item) => item.status === "suspended")) this.host.inboxApplier()?.agentReady(agentId);
    }
    // The others: recovered by their definition when it is defined here
    // (with messages queued and nothing unfinished: their queue restored).
    const unfinished = await this.unfinishedByAgent();
    const queuedOnly: [string, ExecutionRow[]][] = [...this.queuedAtOpen].filter(([agentId]) => !unfinished.has(agentId)).map(([agentId]) => [agentId, []]);
    for (const [agentId, rows] of [...unfinished, ...queuedOnly]) {
      if (this.host.conversations.liveEntry(agentId) !== undefined) continue;
      const kind = rows[0] !== undefined ? this.host.conversations.kindOfRow(rows[0]) : this.host.conversations.kindOf(agentId, this.queuedAtOpen.get(agentId));
      if (kind === undefined) {
        for (const row of rows) {
          const name = row.metadata.config?.["definition"];
          const define = typeof name === "string" ? `the definition named "${name}"` : `agent "${row.agentId}"`;
          report.push({
            executionId: row.executionId,
            agentId: row.agentId,
            phase: row.phase,
            status: "waiting_for_agent",
            reason: `define ${define} in this environment to recover it`,
          });
        }
        continue;
      }
      // Its first use recovers it (with `recover: false`: recovered here).
      const use = this.host.conversations.use(agentId, kind);
      try {
        const entry = await use.entry;
        const recovered = this.host.recoverOnDefine ? await this.recovery(agentId) : await this.recoverAgentEntry(entry);
        report.push(...recovered);
        if (recovered.some((item) => item.status === "suspended")) this.host.inboxApplier()?.agentReady(agentId);
      } finally {
        use.done();
      }
    }
    report.push(...(await this.queuedReport()));
    return report;
  }

  /** Messages still queued once recovery ran, oldest first per
   * conversation (at most `queuedReportedMax`): each runs in its turn,
   * or waits for its definition like the executions ahead of it. */
  private async queuedReport(): Promise<RecoveredExecution[]> {
    const reader = queueReaderOf(this.host.store);
    if (reader === undefined) return [];
    const messages = await reader.listQueuedMessages({ limit: queuedReportedMax });
    messages.sort((a, b) => (a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : a.seq - b.seq));
    let position = 0;
    return messages.map((message, index) => {
      position = index > 0 && messages[index - 1]!.agentId === message.agentId ? position + 1 : 1;
      const defined =
        this.host.conversations.liveKind(message.agentId)
        ?? this.host.conversations.kindOf(message.agentId, typeof message.config["definition"] === "string" ? message.config["definition"] : undefined);
      return {
        executionId: message.executionId,
        agentId: message.agentId,
        phase: "queued",
        status: "queued",
        reason:
          defined !== undefined
            ? `queued (position ${position} in its conversation's queue): runs in its turn`
            : `queued (position ${position}); define its agent in this environment to run it`,
      };
    });
  }

  /** The store's unfinished executions by agent, read once per recovery
   * pass (defining 10,000 agents must not read the table 10,000 times). */
  private unfinished: Promise<Map<string, ExecutionRow[]>> | undefined;
  /** When that read started (`performance.now()`). */
  unfinishedReadAt = 0;

  /** Conversations with messages queued, found by the same scan (their
   * head's definition name): recovered with their definition too. */
  queuedAtOpen = new Map<string, string | undefined>();

  /** That scan once read (undefined while its read is under way). */
  private scanned: Map<string, ExecutionRow[]> | undefined;

  /** When conversations still in a scan were freed here (their executions
   * all ended): an execution live here when the scan was read may have
   * ended since, so their rows, if recovered, are read again first. Each
   * is forgotten once its rows are recovered. */
  private readonly freedAt = new Map<string, number>();

  unfinishedByAgent(): Promise<Map<string, ExecutionRow[]>> {
    if (this.unfinished !== undefined) return this.unfinished;
    this.unfinishedReadAt = performance.now();
    this.scanned = undefined;
    const heads = queueStoreOf(this.host.store)?.queueHeads?.() ?? [];
    const scanning = Promise.all([this.host.store.unfinishedExecutions(), heads]).then(([rows, queued]) => {
      this.queuedAtOpen = new Map(
        queued.map((head) => {
          const name = head.config["definition"];
          return [head.agentId, typeof name === "string" ? name : undefined];
        }),
      );
      const byAgent = new Map<string, ExecutionRow[]>();
      for (const row of rows) {
        const list = byAgent.get(row.agentId);
        if (list) list.push(row);
        else byAgent.set(row.agentId, [row]);
      }
      if (this.unfinished === scanning) this.scanned = byAgent;
      return byAgent;
    });
    this.unfinished = scanning;
    return scanning;
  }

  /** A conversation's entry was freed here: noted while a scan may still
   * hold rows of it. */
  conversationFreed(agentId: string): void {
    if (this.unfinished === undefined || (this.scanned !== undefined && !this.scanned.has(agentId))) return;
    this.freedAt.set(agentId, performance.now());
  }

  /** Recovery of one agent's unfinished executions not already live here.
   * `readAfter`: rows read before that moment (another process owned the
   * agent then) are read again. `given`: the agent's unfinished rows, read
   * from `givenReadAt` on (`performance.now()`; unknown: any earlier time). */
  async recoverAgentEntry(entry: AgentEntry, readAfter?: number, given?: readonly ExecutionRow[], givenReadAt?: number): Promise<RecoveredExecution[]> {
    const report = await this.host.queues.holdWhile(entry.id, () => this.recoverRows(entry, readAfter, given, givenReadAt));
    // Its queued messages wait behind what was recovered (docs/decisions/0025).
    await this.host.queues.restore(entry);
    for (const item of report) {
      if (item.status === "needs_attention")
        this.host.coordinator.settings.logger.warn(
          `[phronomy] execution ${item.executionId} of agent "${item.agentId}" (phase ${item.phase}) needs attention: ${item.reason ?? ""}`,
        );
    }
    return report;
  }

  /** `recoverAgentEntry` with the conversation's queue held: what a fault
   * held released and installed again, then the other rows. */
  private async recoverRows(entry: AgentEntry, readAfter?: number, given?: readonly ExecutionRow[], givenReadAt?: number): Promise<RecoveredExecution[]> {
    if (readAfter !== undefined && this.unfinished !== undefined && this.unfinishedReadAt < readAfter) this.unfinished = undefined;
    const rows: ExecutionRow[] = [];
    const scanning = given === undefined ? this.unfinishedByAgent() : undefined;
    // When the rows were read: the scan's start (taken before awaiting it,
    // a later pass may start another).
    const readAt = scanning !== undefined ? this.unfinishedReadAt : (givenReadAt ?? -Infinity);
    const scan = scanning !== undefined ? await scanning : undefined;
    const unfinished = given ?? scan?.get(entry.id) ?? [];
    // Taken: a later first use of this conversation must not recover them again.
    scan?.delete(entry.id);
    const freedAt = this.freedAt.get(entry.id);
    this.freedAt.delete(entry.id);
    this.queuedAtOpen.delete(entry.id);
    const held: RecoveredExecution[] = await this.releaseFinishedHolds(entry, unfinished);
    for (const row of unfinished) {
      const live = this.host.coordinator.entryById(row.executionId);
      if (!live) rows.push(row);
      else if (live.recoveryRequired) {
        // Held recovery_required here (a write refused: its lease lost, the
        // row moved on): release it, then install it again from its row.
        const code = await this.dischargeRecovery(live.slot, live.generation);
        if (code === ResultCode.NotQuiescent) this.settling.add(entry.id);
        if (code === ResultCode.Ok) rows.push(row);
        else
          held.push({
            executionId: row.executionId,
            agentId: row.agentId,
            phase: row.phase,
            continuation: continuationNameOf(continuationOf(row)),
            status: "needs_attention",
            reason: stillSettlingReason(code),
          });
      }
    }
    const stale = this.host.coordinator.releasedSince(entry, readAt) || (freedAt !== undefined && freedAt >= readAt);
    return [...held, ...(await recoverAgent(this.host.coordinator, this.host.loop, entry, await this.currentRows(rows, stale)))];
  }

  /** The rows to install, of executions not live here now. One that was
   * live here when they were read and ended since (its terminal commit
   * answered before the read did: a loaded machine orders two
   * connections' answers so; or the read was the scan, and the
   * conversation was freed once it ended and is used again) was read
   * unfinished; installed from that row it would run again, or wait for
   * a decision already made, and hold the conversation's admission. So
   * when an execution of the agent was released here since the read
   * began (`stale`), these rows are read again (after that release, so
   * after its commit): only those still unfinished are installed. */
  private async currentRows(rows: readonly ExecutionRow[], stale: boolean): Promise<readonly ExecutionRow[]> {
    if (rows.length === 0 || !stale) return rows;
    const again = await Promise.all(rows.map((row) => this.host.store.getExecution(row.executionId)));
    return again.filter(
      (row): row is ExecutionRow => row !== undefined && row.status !== "terminal" && this.host.coordinator.entryById(row.executionId) === undefined,
    );
  }

  /** Releases what a store failure left held for the agent that the rows
   * read show needs no recovery (docs/decisions/0020): the agent itself
   * when a preparation's outcome could not be read back (its execution, if
   * written, is among `unfinished` and is installed next), and executions
   * held here whose row is no longer unfinished (a terminal commit that did
   * commit before its connection was lost). Their waiters were failed when
   * recovery was required (docs/decisions/0021: a store worker lost holding
   * the terminal commit). Those still busy are reported. */
  private async releaseFinishedHolds(entry: AgentEntry, unfinished: readonly ExecutionRow[]): Promise<RecoveredExecution[]> {
    if (this.host.coordinator.heldAgents.has(entry)) {
      const code = await this.release(M.DischargeAgentRecovery, entry.slot, entry.generation, `the release of agent "${entry.id}" held for recovery`);
      if (code === ResultCode.Ok || code === ResultCode.AdmissionStateMustMatch) this.host.coordinator.heldAgents.delete(entry);
    }
    const busy: RecoveredExecution[] = [];
    const unfinishedIds = new Set(unfinished.map((row) => row.executionId));
    for (const live of this.host.coordinator.recoveryRequiredEntriesOf(entry)) {
      if (unfinishedIds.has(live.executionId)) continue;
      // Held after `unfinished` was read: its own row says whether it ended
      // (if not, the next recovery pass reads it among the unfinished).
      const row = await this.host.store.getExecution(live.executionId);
      if (row !== undefined && row.status !== "terminal") continue;
      const code = await this.dischargeRecovery(live.slot, live.generation);
      if (code === ResultCode.NotQuiescent) this.settling.add(entry.id);
      if (code !== ResultCode.Ok)
        busy.push({
          executionId: live.executionId,
          agentId: entry.id,
          phase: row?.phase ?? "terminal",
          status: "needs_attention",
          reason: stillSettlingReason(code),
        });
    }
    return busy;
  }

  /** Releases an execution held recovery_required in the core once it is
   * quiescent (DischargeRecovery): the code the core answered. */
  private dischargeRecovery(slot: number, generation: number): Promise<number> {
    return this.release(M.DischargeRecovery, slot, generation, "the release of an execution held for recovery");
  }

  /** Applies a release message (DischargeRecovery, DischargeAgentRecovery)
   * on the loop: the code the core answered. */
  private release(kind: M.DischargeRecovery | M.DischargeAgentRecovery, slot: number, generation: number, label: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.host.loop.post(() => resolve(this.host.coordinator.apply(kind, slot, generation)), { completion: { fail: reject }, label });
    });
  }

  /** The store took an agent over (its former owner's lease expired):
   * recover its unfinished executions here (unless `recover: false`). */
  takeOver(agentId: string, epoch: number, retriedAfterMs = 0): void {
    const agent = this.host.conversations.liveEntry(agentId);
    if (!agent || this.host.closed()) return;
    // Owned here now, as the core records it (docs/decisions/0062).
    const recoveredInCore = this.host.conversations.takenOver(agentId);
    // Decisions filed for it wait until its executions are recovered here.
    this.host.inboxApplier()?.agentNotReady(agentId);
    // With `recover: false` the application recovers it (env.recover()).
    if (!this.host.recoverOnDefine) return recoveredInCore();
    const takenAt = performance.now();
    this.host.coordinator.settings.logger.debug?.(`[phronomy] took agent "${agentId}" over at lease epoch ${epoch}; recovering its unfinished executions`);
    // Called in the same turn as the store noted the lease: no admission
    // can slip in before the recovered executions hold theirs. Starts made
    // through agent.start wait for the recovery (`admissionGate`).
    const leasing = leasingStoreOf(this.host.store);
    leasing?.holdAdmissions(agentId, `it was taken over at lease epoch ${epoch} and its unfinished executions are being recovered`);
    const recovered = this.host.conversations
      .holding(agentId, (entry) => this.recoverAgentEntry(entry, takenAt))
      .then((report = []) => {
        recoveredInCore();
        this.host.inboxApplier()?.agentReady(agentId);
        // An execution fenced here whose abandoned session still has
        // operations in flight is released once they settle: try again
        // soon (backing off), while the partition stays held at this epoch.
        if (this.settling.delete(agentId))
          this.recoverAfterRetake(agentId, epoch, Math.min(settlingRetryMsMax, Math.max(settlingRetryMsMin, 2 * retriedAfterMs)));
        return report;
      })
      .finally(() => {
        if (this.takeoverRecoveries.get(agentId) === recovered) {
          this.takeoverRecoveries.delete(agentId);
          leasing?.holdAdmissions(agentId, undefined);
          // The queue was restored during the recovery, while its admissions
          // were held: a head started then was refused and stays queued.
          this.host.queues.restoreLive(agentId).catch(() => undefined);
        }
      });
    recovered.catch((error: unknown) =>
      this.host.coordinator.settings.logger.warn(
        `[phronomy] the recovery of agent "${agentId}" after its takeover failed: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
    this.reports.set(agentId, recovered);
    this.takeoverRecoveries.set(agentId, recovered);
  }

  /** An execution here was held recovery_required, with the error that
   * did it. Refused by the fencing check at an epoch this process no
   * longer holds: if it holds the agent's partition again at a later
   * epoch — lost and taken back while the execution ran — the takeover's
   * recovery may have read the execution before it was held, and no later
   * takeover will come: recover the agent now. Any other error (a store
   * fault, a row that moved on): `healLater`. */
  executionHeld(agentId: string, error: PhronomyError): void {
    const fenced = error.details as { reason?: unknown; epoch?: unknown } | undefined;
    if (fenced?.reason !== "lease_lost" || typeof fenced.epoch !== "number") return this.healLater(agentId);
    // Held, renewed in time or not: a process starved past its lease
    // retakes its own partition at the next epoch, and its admission
    // window may lapse again before this refusal comes back. Not held
    // now: the next take of the partition recovers it (`takeOver`).
    const held = heldEpochOf(this.host.store, agentId);
    if (held !== undefined && held > fenced.epoch) this.recoverAfterRetake(agentId, held);
  }

  /** A store fault held the agent (a preparation whose outcome could not
   * be read back) or one of its executions (a commit whose outcome is not
   * known) for recovery (docs/decisions/0020). On PostgreSQL the owner of
   * the partition heals it by itself — its unfinished rows read again,
   * what was written recovered, the hold released — trying again (250 ms
   * doubling to 5 s) while the database stays unreachable: a conversation
   * routed to this process must not wait for an `env.recover()` nobody
   * calls (docs/decisions/0055). On SQLite `env.recover()` does it, as
   * before: one process owns the file and its application decides. */
  healLater(agentId: string): void {
    if (!this.host.recoverOnDefine || this.host.closed()) return;
    if (leasingStoreOf(this.host.store) === undefined) return;
    this.heals.schedule(agentId, () => this.heal(agentId));
  }

  /** One try of `healLater`: true when nothing is held any more (or the
   * partition is not held here: its next take recovers it). */
  private async heal(agentId: string): Promise<boolean> {
    if (this.host.closed() || heldEpochOf(this.host.store, agentId) === undefined) return true;
    // A takeover's recovery of the agent is under way: it reads the same rows.
    if (this.takeoverRecoveries.has(agentId)) return false;
    const { coordinator } = this.host;
    const held = (entry: AgentEntry) => coordinator.heldAgents.has(entry) || coordinator.recoveryRequiredEntriesOf(entry).length > 0;
    const leasing = leasingStoreOf(this.host.store)!;
    // After any env.recover() of the agent under way: its rows, read
    // before that recovery ended, could be stale.
    const still = await this.oneAtATime(agentId, () =>
      this.host.conversations.holding(agentId, async (entry) => {
        if (!held(entry)) return false;
        const readAt = performance.now();
        const rows = await leasing.unfinishedExecutionsOf(agentId);
        const report = await this.recoverAgentEntry(entry, undefined, rows, readAt);
        if (report.some((item) => item.status === "suspended")) this.host.inboxApplier()?.agentReady(agentId);
        return held(entry);
      }),
    );
    return still !== true;
  }

  /** A decision came for an execution held here after a commit whose
   * outcome was not known (docs/decisions/0057): the agent's rows are read
   * again and what is held recovered — from the decision if it was
   * written, suspended again if not — as `env.recover()` would. Rejects
   * when the store cannot be read. */
  async recoverHeld(agentId: string): Promise<void> {
    const leasing = leasingStoreOf(this.host.store);
    await this.oneAtATime(agentId, () =>
      this.host.conversations.holding(agentId, async (entry) => {
        // PostgreSQL reads this agent's rows only; SQLite scans once, afresh.
        const readAt = performance.now();
        const rows = leasing === undefined ? undefined : await leasing.unfinishedExecutionsOf(agentId);
        const report = await this.recoverAgentEntry(entry, performance.now(), rows, readAt);
        if (report.some((item) => item.status === "suspended")) this.host.inboxApplier()?.agentReady(agentId);
      }),
    );
  }

  /** Runs `work` after the agent's `env.recover()` or heal under way, if
   * any: two recoveries of one agent at once could install a row the
   * other just finished from. */
  private oneAtATime<T>(agentId: string, work: () => Promise<T>): Promise<T> {
    const before = this.agentRecoveries.get(agentId) ?? Promise.resolve();
    const running = before.catch(() => undefined).then(work);
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    this.agentRecoveries.set(agentId, settled);
    void settled.then(() => {
      if (this.agentRecoveries.get(agentId) === settled) this.agentRecoveries.delete(agentId);
    });
    return running;
  }

  /** The tail of each agent's env.recover() and heals (`oneAtATime`). */
  private readonly agentRecoveries = new Map<string, Promise<void>>();

  /** Recovers the agent's executions held here (released and installed
   * again from their rows, or let go if another process finished them),
   * after any takeover recovery under way, unless the partition moved
   * again. `delayMs`: first wait that long (an abandoned session's
   * operations still settling). */
  recoverAfterRetake(agentId: string, epoch: number, delayMs = 0): void {
    const running = this.takeoverRecoveries.get(agentId) ?? Promise.resolve();
    void running
      .catch(() => undefined)
      .then(() => new Promise((resolve) => (delayMs > 0 ? setTimeout(resolve, delayMs).unref() : setImmediate(resolve))))
      .then(() => {
        if (this.host.closed() || heldEpochOf(this.host.store, agentId) !== epoch) return;
        this.host.coordinator.settings.logger.debug?.(
          `[phronomy] agent "${agentId}" holds executions fenced while its partition was lost; taken back at lease epoch ${epoch}: recovering them`,
        );
        this.takeOver(agentId, epoch, delayMs);
      });
  }

  /** What a start of the agent waits for before it is posted:
   * the recovery of a takeover in progress, if any. */
  admissionGate(agentId: string): Promise<unknown> | undefined {
    return this.takeoverRecoveries.get(agentId);
  }
}

/** The first and the longest wait before a takeover's recovery tries
 * again to release an execution whose abandoned session was still settling. */
const settlingRetryMsMin = 50;
const settlingRetryMsMax = 1_000;

/** Queued messages `env.recover()` lists at most. */
const queuedReportedMax = 1_000;

/** Why a held execution could not be released yet. */
function stillSettlingReason(code: number): string {
  return `${resultCodeName(code)}: its abandoned session still has operations in flight here; call env.recover() again once they settled`;
}
