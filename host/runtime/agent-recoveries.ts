// The recoveries of an environment's agents (SPEC §6.2): the one scan of
// unfinished executions each definition recovers its own from
// (docs/decisions/0024), `env.recover()`, and the recovery of an agent taken
// over from an expired lease, taken back after a fenced write, healed after
// a store fault. Every one of them enters the one pipeline
// (`recovery-pipeline.ts`): the core orders each pass under an epoch and
// answers when a held conversation is tried again. How one execution is
// continued is `recovery.ts`'s; this holds what one pass does with the rows
// — what a store failure left held is released first, then the rows are
// installed and the queue restored.
//
// Rules kept: the unfinished rows are read once per recovery pass; an agent
// taken over admits no start until its recovery ends (the core answers
// `WaitUntilReady` while it recovers, `readiness-waiters.ts`): the core is
// told of the takeover before any `Admit` that follows the store's signal
// (`beforeAdmit`); a decision filed for it waits for the same: the core
// closes its inbox (`CloseInbox`), and until the core is told the takeover
// is pending (`takeoverPending`: the inbox asks the core nothing yet).

import { ConversationPhase, HoldCause, MessageKind as M, RecoveryCause, RecoveryFact, RecoveryOutcome, ResultCode } from "../../assembly/abi.js";
import { resultCodeName } from "../core/names.js";
import type { PhronomyError } from "../errors.js";
import type { ExecutionStore } from "../store/store.js";
import type { ExecutionRow } from "../store/records.js";
import { queueReaderOf, queueStoreOf } from "../store/queue.js";
import type { ControlLoop } from "./control-loop.js";
import type { Coordinator } from "./coordinator.js";
import type { ConversationHost, Conversations } from "./conversations.js";
import type { ConversationQueues } from "./conversation-queue.js";
import type { AgentEntry } from "./requests.js";
import { continuationNameOf, continuationOf, recoverAgent, type RecoveredExecution } from "./recovery.js";
import { RecoveryPipeline, type RecoveryTrigger } from "./recovery-pipeline.js";
import { heldEpochOf, leasingStoreOf } from "./leases.js";
import { releaseSupersededSuspensions } from "./superseded-suspensions.js";
import type { Waiting } from "./run.js";
import { partitionedStoreOf } from "./partition-takeover.js";
import { postRetaken, tellRetaken, type RecoverAfterRetake } from "./retakes.js";

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
  /** The follower of executions run elsewhere (durable-watch.ts). */
  follow(agentId: string, executionId: string, waiter: Waiting): void;
}

/** A takeover the store noted that the core has not been told of yet. */
interface PendingTakeover {
  readonly trigger: RecoveryTrigger;
  /** Settles the takeover's report with its recovery (undefined: the core
   * refused it, or the conversation is not live here any more). */
  readonly settle: (recovery: Promise<RecoveredExecution[] | undefined> | undefined) => void;
}

/** Every recovery an environment runs, and the report of each agent's. */
/** One pass of `recoverAgentEntry`. `readAfter`: rows read before that
 * moment (another process owned the agent then) are read again. `given`:
 * the agent's unfinished rows, read from `givenReadAt` on
 * (`performance.now()`; unknown: any earlier time). `readQueue`: the
 * core's `ReadRows` asks for the durable queue to be read too. */
interface RowsPass {
  readonly readAfter?: number;
  readonly given?: readonly ExecutionRow[];
  readonly givenReadAt?: number;
  readonly readQueue: boolean;
}

export class AgentRecoveries {
  /** Each agent's recovery report (`env.recovery(agentId)`). */
  private readonly reports = new Map<string, Promise<RecoveredExecution[]>>();
  /** Agents whose last pass left a row for a start still being prepared
   * here (`preparingHere`): a fact the pass reports to the core
   * (`RecoveryFact.StartPreparingHere`), which decides the conversation is
   * still settling, holds it and asks again. */
  private readonly leftForPreparingStarts = new Set<string>();
  /** The one way back in (docs/decisions/0062). */
  private readonly pipeline: RecoveryPipeline;
  /** Takeovers the store noted (its lease admits starts here already)
   * whose message has not reached the loop yet, by agent id. */
  private readonly takeovers = new Map<string, PendingTakeover>();

  constructor(private readonly host: AgentRecoveriesHost) {
    this.pipeline = new RecoveryPipeline({
      ...host,
      passFromStore: (entry, readQueue) => this.passFromStore(entry, readQueue),
      passFacts: (entry) => this.passFacts(entry),
    });
    if (leasingStoreOf(host.store) !== undefined) host.coordinator.beforeAdmit = (agent) => this.beforeAdmit(agent);
    host.coordinator.onRetryAfter = (agent, epoch, delayMs) => this.pipeline.retryAfter(agent.id, epoch, delayMs);
  }

  /** The recovery report of an agent defined in this environment. */
  recovery(agentId: string): Promise<RecoveredExecution[]> {
    return this.reports.get(agentId) ?? Promise.resolve([]);
  }

  /** A first use's recovery of `epoch` ended: the core's answer is
   * carried out by the one pipeline (`RecoveryPipeline.finishFirstUse`). */
  finishFirstUse(entry: AgentEntry, epoch: number, outcome: RecoveryOutcome): Promise<void> {
    return this.pipeline.finishFirstUse(entry, epoch, outcome);
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
    // Conversations live here: their unfinished rows, and what a store
    // failure left held for them. One whose lease another process holds
    // (or nobody does) is that holder's to recover: the core refuses it
    // (`LeaseNotHeldHere`), and nothing is reported for it.
    for (const agentId of this.host.conversations.liveIds()) {
      await this.host.conversations.liveEntry(agentId)?.catch(() => undefined);
      report.push(...((await this.recoverCalled(agentId)) ?? []));
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
        await use.entry;
        report.push(...((this.host.recoverOnDefine ? await this.recovery(agentId) : await this.recoverCalled(agentId)) ?? []));
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

  /** Recovery of one agent's unfinished executions not already live here
   * (`RowsPass` says which rows, and whether its queue is read). */
  async recoverAgentEntry(entry: AgentEntry, pass: RowsPass): Promise<RecoveredExecution[]> {
    // Its queue's head is not started meanwhile: the conversation is
    // recovering in the core, whose `Admit` answers a head `StayQueued`
    // and which offers it (`StartHead`) when the recovery ends.
    const report = await this.recoverRows(entry, pass.readAfter, pass.given, pass.givenReadAt);
    // Its queued messages wait behind what was recovered (docs/decisions/0025),
    // read when the core's `ReadRows` says so.
    if (pass.readQueue) await this.host.queues.restore(entry);
    for (const item of report) {
      if (item.status === "needs_attention")
        this.host.coordinator.settings.logger.warn(
          `[phronomy] execution ${item.executionId} of agent "${item.agentId}" (phase ${item.phase}) needs attention: ${item.reason ?? ""}`,
        );
    }
    return report;
  }

  /** `recoverAgentEntry`'s rows: what a fault held released and installed
   * again, then the other rows. */
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
    // Suspended here, moved on at another process meanwhile: installed from the row.
    await releaseSupersededSuspensions(this.host, entry, unfinished);
    for (const row of unfinished) {
      // Suspended here and let go of (at rest, so not held): nothing to
      // install; its due time arms the sweep again, as a recovered one's.
      if (this.host.coordinator.dormant.has(row.executionId)) {
        this.host.coordinator.suspensionFoundAgain(row);
        continue;
      }
      const live = this.host.coordinator.entryById(row.executionId);
      if (!live && this.preparingHere(entry, row, held)) continue;
      if (!live) rows.push(row);
      else if (live.suspended && !this.host.coordinator.heldForRecovery(live)) this.host.coordinator.suspensionFoundAgain(row);
      else if (this.host.coordinator.heldForRecovery(live)) {
        // Held recovery_required here (a write refused: its lease lost, the
        // row moved on): release it, then install it again from its row.
        // Refused NotQuiescent, it stays held: the core sees its operations
        // in flight when the pass ends, and holds the conversation to settle.
        const code = await this.dischargeRecovery(live.slot, live.generation);
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

  /** A row of an execution whose start this process is still preparing: a
   * queue head taken here before another process that held the
   * conversation meanwhile prepared the same message. Installed now, the
   * row would be refused busy (that start holds the admission) and never
   * recovered; so the pass leaves it and tells the core
   * (`RecoveryFact.StartPreparingHere`), which holds the conversation as
   * still settling and asks again after its backoff; once that
   * preparation is refused — the execution exists — the row is installed.
   * So too a row read while another start of the conversation holds the
   * admission here, being prepared (docs/decisions/0137: a start sent
   * before the conversation was taken over elsewhere and back): installed
   * now, it would be refused busy and never tried again, and that start,
   * refused by the fence or placed again, could leave it active for ever
   * or run beside it. Only on a leasing store, where the row can have been written by
   * another process (on SQLite one process owns the file: the row is
   * tried, and reported, as before). */
  private preparingHere(entry: AgentEntry, row: ExecutionRow, report: RecoveredExecution[]): boolean {
    if (leasingStoreOf(this.host.store) === undefined) return false;
    const itsOwn = this.host.coordinator.requests.startingAs(row.executionId) !== undefined;
    if (!itsOwn && !this.host.coordinator.settings.core.agentAdmitting(entry.slot)) return false;
    this.leftForPreparingStarts.add(entry.id);
    report.push({
      executionId: row.executionId,
      agentId: row.agentId,
      phase: row.phase,
      continuation: continuationNameOf(continuationOf(row)),
      status: "needs_attention",
      reason: itsOwn
        ? "its start is still being prepared here (another process prepared it meanwhile); recovered once that preparation settled"
        : "another start of its conversation is still being prepared here (it holds the admission); recovered once that preparation settled",
    });
    return true;
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
    return again.filter((row): row is ExecutionRow => row !== undefined && row.status !== "terminal" && !this.host.coordinator.hasExecution(row.executionId));
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
    if (this.host.coordinator.settings.core.agentHeldForRecovery(entry.slot)) {
      await this.release(M.DischargeAgentRecovery, entry.slot, entry.generation, `the release of agent "${entry.id}" held for recovery`);
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
    return this.onLoop(() => this.host.coordinator.apply(kind, slot, generation), label);
  }

  /** Runs `body` on the control loop and resolves with what it returned. */
  private onLoop<T>(body: () => T, label: string): Promise<T> {
    return new Promise((resolve, reject) => {
      this.host.loop.post(() => resolve(body()), { completion: { fail: reject }, label });
    });
  }

  /** `env.recover()` of a conversation held here: a pass of its own, on
   * the rows of this call's scan. Held here: with `recover: false`, a
   * conversation taken over is recorded owned here by this call. */
  private recoverCalled(agentId: string): Promise<RecoveredExecution[] | undefined> {
    const trigger = { cause: RecoveryCause.RecoverCalled, fresh: true, ownedHere: true };
    return this.pipeline.request(agentId, { ...trigger, pass: (entry, readQueue) => this.recoverAgentEntry(entry, { readQueue }) });
  }

  /** A takeover the store noted whose message has not reached the core
   * yet: what the core answers of the conversation (its inbox open) is
   * about to change. */
  takeoverPending(agentId: string): boolean {
    return this.takeovers.has(agentId);
  }

  /** The store took an agent over (its former owner's lease expired, its
   * partition was taken, or this process took it back): recover its
   * unfinished executions here (unless `recover: false`). */
  takeOver(agentId: string, epoch: number, cause: RecoveryCause = this.takeoverCause()): void {
    const agent = this.host.conversations.liveEntry(agentId);
    if (!agent || this.host.closed()) return;
    // With `recover: false` the application recovers it (env.recover()).
    if (!this.host.recoverOnDefine) return this.host.conversations.takenOverUnrecovered(agentId);
    const takenAt = performance.now();
    this.host.coordinator.settings.logger.debug?.(`[phronomy] took agent "${agentId}" over at lease epoch ${epoch}; recovering its unfinished executions`);
    const recovered = this.noteTakeover(agentId, {
      cause,
      ownedHere: true,
      pass: (entry, readQueue) => this.recoverAgentEntry(entry, { readAfter: takenAt, readQueue }),
    });
    recovered.catch((error: unknown) =>
      this.host.coordinator.settings.logger.warn(
        `[phronomy] the recovery of agent "${agentId}" after its takeover failed: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
    this.reports.set(agentId, recovered);
  }

  /** Called in the same turn as the store noted the lease, which admits
   * starts here from now on: the takeover is pending until the core is
   * told (`ConversationOwned(here)`, `RecoveryRequested`) — on the loop
   * once the conversation's entry is ready, or by the first `Admit` that
   * comes before (`beforeAdmit`). So every `Admit` after the store's
   * signal answers from a core that knows: the conversation recovers, and
   * a start waits (`WaitUntilReady`) instead of running before the
   * executions recovered. The report of the takeover's recovery. */
  private noteTakeover(agentId: string, trigger: RecoveryTrigger): Promise<RecoveredExecution[]> {
    return new Promise<RecoveredExecution[] | undefined>((resolve, reject) => {
      const earlier = this.takeovers.get(agentId);
      const takeover: PendingTakeover = {
        trigger,
        settle: (recovery) => {
          earlier?.settle(recovery);
          (recovery ?? Promise.resolve(undefined)).then(resolve, reject);
        },
      };
      this.takeovers.set(agentId, takeover);
      this.host.conversations
        .holding(agentId, (entry) => this.onLoop(() => this.tellTakeover(entry), `the takeover of conversation "${agentId}"`))
        .catch(() => undefined)
        .finally(() => {
          // Not told: the conversation is not live here any more (its entry
          // stale, its first use failed) or the loop closed. Nothing to recover.
          if (this.takeovers.get(agentId) !== takeover) return;
          this.takeovers.delete(agentId);
          takeover.settle(undefined);
        });
    }).then((report) => report ?? []);
  }

  /** On the loop: the core is told of the conversation's pending takeover,
   * and its recovery is carried out (`RecoveryPipeline.requestNow`). One
   * the core refused (a stale entry) stays pending. */
  private tellTakeover(entry: AgentEntry): void {
    const takeover = this.takeovers.get(entry.id);
    const recovery = takeover && this.pipeline.requestNow(entry, takeover.trigger);
    if (takeover === undefined || recovery === undefined) return;
    this.takeovers.delete(entry.id);
    takeover.settle(recovery);
  }

  /** On the loop, before every `Admit` (`Coordinator.beforeAdmit`): a
   * takeover the store noted whose message has not reached the loop yet is
   * told now when the conversation is ready — the one phase in which the
   * core answers `RunHere`, so a start is never run on a phase the store's
   * lease has made stale; in every other phase the `Admit` does not run it
   * here (waits, stays queued, is refused held, or finds the store holding
   * a conversation the core records owned elsewhere), and the takeover is
   * told on its own. */
  private beforeAdmit(entry: AgentEntry): void {
    if (!this.takeovers.has(entry.id)) return;
    if (this.host.coordinator.settings.core.conversation(entry.slot).phase !== ConversationPhase.Ready) return;
    this.tellTakeover(entry);
  }

  /** A takeover the store reported: of a partition, or of one agent's lease. */
  private takeoverCause(): RecoveryCause {
    return partitionedStoreOf(this.host.store) !== undefined ? RecoveryCause.PartitionTaken : RecoveryCause.LeaseTakeover;
  }

  /** An execution here was held recovery_required, with the error that
   * did it. Refused by the fencing check at an epoch this process no
   * longer holds: if it holds the agent's partition again at a later
   * epoch — lost and taken back while the execution ran — the takeover's
   * recovery may have read the execution before it was held, and no later
   * takeover will come: a retake (`FencedWrite`), and the core says whether
   * it is recovered now (retakes.ts; the core makes a recovery under way
   * read again). Any other error (a store fault, a row that moved on):
   * `healLater`. */
  executionHeld(agentId: string, error: PhronomyError): void {
    const fenced = error.details as { reason?: unknown; epoch?: unknown } | undefined;
    if (fenced?.reason !== "lease_lost" || typeof fenced.epoch !== "number") return this.healLater(agentId);
    // Held, renewed in time or not: a process starved past its lease
    // retakes its own partition at the next epoch, and its admission
    // window may lapse again before this refusal comes back. Not held
    // now: the next take of the partition recovers it (`takeOver`).
    const held = heldEpochOf(this.host.store, agentId);
    if (held !== undefined && held > fenced.epoch) postRetaken(this.host, agentId, held, RecoveryCause.FencedWrite, this.recoverAfterRetake);
  }

  /** On the loop: a start the core placed elsewhere found the store
   * holding its conversation here — a retake; the core says whether it is
   * recovered now (retakes.ts). */
  takenBack(entry: AgentEntry): void {
    const epoch = heldEpochOf(this.host.store, entry.id);
    // Moved here by this process (decision 0101): the store's fact, the core's rows.
    const moved = (this.host.store as Partial<{ movedHere(agentId: string): boolean }>).movedHere?.(entry.id) === true;
    if (epoch !== undefined) tellRetaken(this.host.coordinator, entry, epoch, moved ? RecoveryCause.Moved : RecoveryCause.Retake, this.recoverAfterRetake);
  }

  /** A store fault held the agent (a preparation whose outcome could not
   * be read back) or one of its executions (a commit whose outcome is not
   * known) for recovery (docs/decisions/0020). On PostgreSQL the owner of
   * the partition heals it by itself: the conversation is held in the
   * core, which asks for a recovery after its backoff (250 ms doubling to
   * 5 s) while the database stays unreachable — a conversation routed to
   * this process must not wait for an `env.recover()` nobody calls
   * (docs/decisions/0055). On SQLite `env.recover()` does it, as before:
   * one process owns the file and its application decides. */
  healLater(agentId: string): void {
    if (!this.host.recoverOnDefine || this.host.closed()) return;
    if (leasingStoreOf(this.host.store) === undefined) return;
    this.pipeline.held(agentId, HoldCause.StoreFault);
  }

  /** A decision came for an execution held here after a commit whose
   * outcome was not known (docs/decisions/0057): the agent's rows are read
   * again and what is held recovered — from the decision if it was
   * written, suspended again if not — as `env.recover()` would. Rejects
   * when the store cannot be read. */
  async recoverHeld(agentId: string): Promise<void> {
    await this.pipeline.request(agentId, { cause: RecoveryCause.HealAfterStoreFault, fresh: true });
  }

  /** The core's `RecoveryDue` of a retake (retakes.ts): recovers the
   * agent's executions held here (released and installed again from their
   * rows, or let go if another process finished them), unless the
   * partition moved again since `epoch`. */
  readonly recoverAfterRetake: RecoverAfterRetake = (agentId, epoch, cause) => {
    if (this.host.closed() || heldEpochOf(this.host.store, agentId) !== epoch) return;
    this.host.coordinator.settings.logger.debug?.(
      `[phronomy] agent "${agentId}" holds executions fenced while its partition was lost; taken back at lease epoch ${epoch}: recovering them`,
    );
    this.takeOver(agentId, epoch, cause);
  };

  /** On the loop, before a start asks `Admit`: when this process's own
   * lease tick is renewing the conversation's partition late, or taking it
   * back (a race it resolves itself, docs/decisions/0055), the settling is
   * a recovery the core knows (`LeaseSettling`: it reads nothing; a
   * takeover it ends in joins it and reads the rows), so the start's
   * `Admit` answers `WaitUntilReady` and it waits for the core to open the
   * conversation again — never refused for that race. */
  settleLease(entry: AgentEntry): void {
    const settling = partitionedStoreOf(this.host.store)?.partitionSettling(entry.id);
    if (settling === undefined || this.host.closed()) return;
    const pass = async (): Promise<RecoveredExecution[]> => {
      await settling;
      return [];
    };
    this.pipeline.requestNow(entry, { cause: RecoveryCause.LeaseSettling, fresh: true, pass })?.catch(() => undefined);
  }

  /** A pass on the agent's rows read now: PostgreSQL reads this agent's
   * rows only; SQLite scans once, afresh. */
  private async passFromStore(entry: AgentEntry, readQueue: boolean): Promise<RecoveredExecution[]> {
    const leasing = leasingStoreOf(this.host.store);
    const readAt = performance.now();
    const rows = leasing === undefined ? undefined : await leasing.unfinishedExecutionsOf(entry.id);
    return this.recoverAgentEntry(entry, { readAfter: performance.now(), given: rows, givenReadAt: readAt, readQueue });
  }

  /** The facts of the pass that ran, for `RecoveryFinished`: the core
   * decides from them, and from its own tables (an execution a fault held
   * is held still, its abandoned session's operations in flight), whether
   * the conversation is ready or still settling. */
  private passFacts(entry: AgentEntry): number {
    return this.leftForPreparingStarts.delete(entry.id) ? RecoveryFact.StartPreparingHere : 0;
  }
}

/** Queued messages `env.recover()` lists at most. */
const queuedReportedMax = 1_000;

/** Why a held execution could not be released yet. */
function stillSettlingReason(code: number): string {
  return `${resultCodeName(code)}: its abandoned session still has operations in flight here; call env.recover() again once they settled`;
}

/** The conversations' hooks into the recoveries (`ConversationHost`):
 * the one scan, a first use's rows recovered, a conversation freed, and
 * its report. */
export function recoveryHooksOf(
  recoveries: () => AgentRecoveries,
): Pick<
  ConversationHost,
  "unfinishedByAgent" | "unfinishedReadAt" | "queuedAtOpen" | "recoverEntry" | "finishRecovery" | "conversationFreed" | "reportRecovery"
> {
  return {
    unfinishedByAgent: () => recoveries().unfinishedByAgent(),
    unfinishedReadAt: () => recoveries().unfinishedReadAt,
    queuedAtOpen: () => recoveries().queuedAtOpen,
    recoverEntry: (entry, rows, readAt, readQueue) => recoveries().recoverAgentEntry(entry, { given: rows, givenReadAt: readAt, readQueue }),
    finishRecovery: (entry, epoch, outcome) => recoveries().finishFirstUse(entry, epoch, outcome),
    conversationFreed: (agentId) => recoveries().conversationFreed(agentId),
    reportRecovery: (agentId, report) => {
      report.catch(() => undefined);
      recoveries().report(agentId, report);
    },
  };
}
