// The filer's side of a start filed for another process (issue 13 step 3,
// docs/decisions/0031): `agent.start` in a PostgreSQL process that does not
// hold the conversation's partition files the start in the inbox, resolves
// the Run's `executionId` at once (the id is chosen when filing), and
// follows the execution from the durable rows: its progress events from
// the timeline, `approval_required` when it suspends, its outcome (or the
// owner's refusal) at the end.
//
// Rules kept here:
// * Every start followed by the environment is read in two statements per
//   poll (rows, then the steps after each cursor); the interval doubles
//   while nothing changes and drops back as soon as something does.
// * Progress events come from the timeline, so they arrive per durable step
//   (a model call's text comes whole with its answer, not as deltas), late
//   by at most one poll.
// * A cancel reaches the Run at once (docs/decisions/0047): one this
//   process committed settles it then (`cancelledHere`: nobody notifies
//   the process that wrote it); one from another process is told on this
//   process's channel by the cancel's own statement, then read.
// * A start found filed or run already (same execution id: the same
//   idempotency key) is followed, not filed again.
// * The follows are bounded (`remoteStartsMax`); past it a start is refused
//   with CAPACITY, nothing filed. On close every follow is settled with
//   RuntimeShutdownError; the filed starts stay in the inbox and their
//   owner still runs them.

import { randomUUID } from "node:crypto";
import { FiledFollowVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { PhronomyError, RuntimeShutdownError } from "../errors.js";
import { capabilitiesOf } from "../store/capabilities.js";
import { rebuildError, type TransferredError } from "../store/error-transfer.js";
import type { ExecutionRow, Json, StoredStep } from "../store/records.js";
import type { FiledStart, FiledStartAnswer, StartFiling, StartProgress } from "../store/start-filing.js";
import { startTiming } from "../store/start-timing.js";
import { BackoffPoller } from "./backoff-poller.js";
import { filedStartFollowFactsOf } from "./filed-follow.js";
import { emitToWaiter, settleWaiterWithError, type DeliverySettings } from "./delivery.js";
import { settleFromRow } from "./durable-outcome.js";
import type { ApprovalRequest, ExecutionEvent, HandoffRequest } from "./events.js";
import type { Waiter } from "./run.js";
import { asPhronomyError } from "./session.js";

/** What the filer needs of a store that files starts (PostgreSQL). */
export interface StartInboxStore {
  fileStart(filing: Omit<StartFiling, "filedBy">): Promise<FiledStartAnswer>;
  /** Cancels a start still filed (any process that may write, one taking
   * no share included); what it found. */
  cancelFiledStart(
    executionId: string,
    error: string,
    at: number,
  ): Promise<{ readonly agentId: string; readonly state: "cancelled" | "claimed" | "settled" } | undefined>;
  /** Whether this process takes a share of the partitions: starts are
   * filed for it, and it files its own for their owners. One that takes
   * none (`balance: false`, the CLI's commands) runs its starts or
   * refuses them. */
  readonly balancing: boolean;
  readStarts(follows: readonly { readonly executionId: string; readonly afterSeq: number }[]): Promise<StartProgress[]>;
  /** Whether the store's `filedStartMoved` signal is heard now (its
   * listener is up, docs/decisions/0047): when not, the filer polls. */
  readonly hearsFiledStarts?: boolean;
}

/** The store's facts on a start: whether it can be filed goes into `Admit`
 * (`AdmissionFact.CanFile`); on a verdict that places it elsewhere
 * (`FileForOwner`, `LeaveFiled`, `RefuseOwnedElsewhere`) they say where
 * the core's verdict is carried out (`ConversationQueues.placeElsewhere`).
 * They decide nothing. */
export interface StartPlacement {
  /** The store names an epoch of the conversation held here (its lease,
   * or its partition, renewed in time or not): the core's phase is stale. */
  readonly heldHere: boolean;
  /** The inbox to file the start in for the process that holds it: when
   * the store has one, this process files (it takes a share, and is
   * open) and the partition did not lapse here (this process takes it
   * back at its next tick: a start filed meanwhile would go to itself,
   * docs/decisions/0058). Defined: the core is told a start can be filed. */
  readonly inbox: RemoteStarts | undefined;
  /** Asks the store to move the conversation here (it has nothing
   * anywhere: docs/decisions/0101); defined when the store does that
   * (`takeIdleHere`) and a start can be filed. Resolves once answered,
   * moved or not (the placement read again says which). */
  readonly takeHere?: () => Promise<void>;
  /** The store's refusal of a start here (AGENT_BUSY, lease_not_held, the
   * owner named), for a start the core refused as owned elsewhere. */
  refusal(): PhronomyError;
}

/** The store's start inbox, when it declares one. */
export function startInboxStoreOf(store: object): StartInboxStore | undefined {
  return capabilitiesOf(store).startInbox ? (store as StartInboxStore) : undefined;
}

/** Starts one environment follows at once (filing included). */
export const remoteStartsMax = 1_000;
export const remoteStartPollMsMin = 25;
export const remoteStartPollMsMax = 2_000;
/** The shortest poll while every start followed is one its owner tells
 * this process about (docs/decisions/0047): the poll only catches a
 * notification lost while the listener reconnected, or an owner that took
 * the partition over and does not know the filer. */
export const remoteStartFallbackPollMsMin = 1_000;
/** Told reads in flight at once (each takes a pool connection for its two
 * statements): a notification arriving while one read is under way is
 * read by another at once, so the filer hears a terminal write one round
 * trip after it, not two (docs/decisions/0068). */
export const toldReadsMax = 3;
/** Execution ids heard of before their follow began (the owner was faster
 * than the filing's answer), kept until the next read. */
const heardEarlyMax = 1_000;

interface Follow {
  readonly executionId: string;
  readonly agentId: string;
  readonly waiter: Waiter;
  /** The last timeline step turned into events. */
  seq: number;
  /** The last suspended revision announced. */
  announcedRevision: number;
  /** Model calls seen (the `turn` of model_call_started). */
  turns: number;
  /** Filed by this process now: its owner tells this process when it
   * moves (docs/decisions/0047); otherwise only the poll sees it. */
  readonly told: boolean;
  /** `env.wait`: rejected with ApprovalRequiredError on a suspension, no
   * progress events (docs/decisions/0018). */
  readonly observer: boolean;
  /** A keyed start's own refusal, told when the key's execution is found
   * neither stored nor filed (decision 0145): its first start failed
   * before writing anything, after this one was refused busy by it. */
  readonly gone?: PhronomyError;
}

export class RemoteStarts {
  private readonly follows = new Map<number, Follow>();
  private nextToken = 1;
  private filing = 0;
  private readonly poller = new BackoffPoller(
    () => this.poll(),
    () => this.follows.size > 0,
    () => this.pollMsMin(),
    remoteStartPollMsMax,
  );
  private closed = false;
  /** Executions told to have moved, read at the next read. */
  private readonly moved = new Set<string>();
  private readonly heardEarly = new Set<string>();
  /** Told reads under way (at most `toldReadsMax`). */
  private readonly reading = new Set<Promise<void>>();
  private readAgain = false;

  constructor(
    private readonly store: StartInboxStore,
    private readonly settings: DeliverySettings & { readonly core: Pick<ControlCore, "filedStartFollowVerdict"> },
  ) {}

  /** The owner wrote (or refused) a start filed here (the store's
   * `filedStartMoved` signal): read it soon. */
  heard(executionId: string | undefined): void {
    if (this.closed) return;
    if (executionId === undefined) {
      for (const follow of this.follows.values()) this.moved.add(follow.executionId);
    } else if (this.followed(executionId)) {
      this.moved.add(executionId);
    } else if (this.heardEarly.size < heardEarlyMax) {
      this.heardEarly.add(executionId);
    }
    this.readSoon();
  }

  private followed(executionId: string): boolean {
    for (const follow of this.follows.values()) if (follow.executionId === executionId) return true;
    return false;
  }

  /** Reads the executions told to have moved, `toldReadsMax` reads at a
   * time (docs/decisions/0068): a terminal write told while a read is
   * under way is read at once, not a read later. Past that, those told
   * meanwhile are read by the next one to start. Two reads of one
   * execution in flight tell each step once (`judge` skips seqs seen). */
  private readSoon(): void {
    if (this.moved.size === 0) return;
    if (this.reading.size >= toldReadsMax) {
      this.readAgain = true;
      return;
    }
    const reading: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(async () => {
        if (this.moved.size === 0) return;
        const ids = new Set(this.moved);
        this.moved.clear();
        this.heardEarly.clear();
        await this.read([...this.follows].filter(([, follow]) => ids.has(follow.executionId)));
      })
      .finally(() => {
        this.reading.delete(reading);
        if (this.readAgain) {
          this.readAgain = false;
          this.readSoon();
        }
      });
    this.reading.add(reading);
  }

  /** 25 ms while a start followed is not told to this process (or the
   * store cannot tell now), else the fallback's second. */
  private pollMsMin(): number {
    if (this.store.hearsFiledStarts !== true) return remoteStartPollMsMin;
    for (const follow of this.follows.values()) if (!follow.told) return remoteStartPollMsMin;
    return remoteStartFallbackPollMsMin;
  }

  /** Files the start under `executionId`; the waiter knows the id once it
   * is filed (or found filed or run already) and follows the execution. */
  file(agentId: string, executionId: string, start: FiledStart, waiter: Waiter): void {
    if (this.closed) return settleWaiterWithError(waiter, new RuntimeShutdownError(`a start of agent "${agentId}"`, { agentId }), this.settings);
    if (this.follows.size + this.filing >= remoteStartsMax) {
      return settleWaiterWithError(
        waiter,
        new PhronomyError(
          "CAPACITY",
          `this environment already follows ${remoteStartsMax} starts filed for other processes; the start of agent "${agentId}" was not filed — retry once some settled`,
          { agentId },
        ),
        this.settings,
      );
    }
    this.filing += 1;
    startTiming.mark(executionId, "filing");
    this.store.fileStart({ decisionId: randomUUID(), executionId, agentId, start, filedAt: Date.now() }).then(
      (answer) => {
        this.filing -= 1;
        startTiming.mark(executionId, "filed");
        this.follow(agentId, executionId, waiter, answer.filedNow);
      },
      (error: unknown) => {
        this.filing -= 1;
        settleWaiterWithError(waiter, asPhronomyError(error, "STORE"), this.settings);
      },
    );
  }

  /** Follows an execution run (or to be run) by whichever process owns it:
   * a start whose execution id was started already (its idempotency key). */
  follow(agentId: string, executionId: string, waiter: Waiter, told = false, gone?: PhronomyError): void {
    if (this.closed) return settleWaiterWithError(waiter, shutdownError(executionId, agentId), this.settings);
    waiter.knowExecutionId(executionId);
    this.follows.set(this.nextToken++, {
      executionId,
      agentId,
      waiter,
      seq: 0,
      announcedRevision: 0,
      turns: 0,
      observer: false,
      told,
      ...(gone ? { gone } : {}),
    });
    if (this.heardEarly.delete(executionId)) {
      this.moved.add(executionId);
      this.readSoon();
    }
    this.poller.wake();
  }

  /** `env.wait` on an id with no row here: a start filed (or a message
   * queued) in another process is waited for; anything else is settled
   * as the row says (no such execution). */
  observe(executionId: string, waiter: Waiter): void {
    if (this.closed) return settleWaiterWithError(waiter, shutdownError(executionId, ""), this.settings);
    this.follows.set(this.nextToken++, {
      executionId,
      agentId: "",
      waiter,
      seq: Number.MAX_SAFE_INTEGER,
      announcedRevision: 0,
      turns: 0,
      observer: true,
      told: false,
    });
    this.poller.wake();
  }

  /** A cancel this process committed of a start it follows (filed from
   * here: nobody notifies the process that wrote it, docs/decisions/0047):
   * judged now as the next read would find it — `progress` is what the
   * cancel wrote — rather than at that read. */
  cancelledHere(progress: StartProgress): void {
    if (this.closed) return;
    for (const [token, follow] of [...this.follows]) {
      if (follow.executionId === progress.executionId) this.judge(token, follow, progress);
    }
  }

  /** Settles every follow with RuntimeShutdownError (the starts stay filed). */
  async close(): Promise<void> {
    this.closed = true;
    await this.poller.stop();
    await Promise.all(this.reading);
    for (const follow of this.follows.values()) settleWaiterWithError(follow.waiter, shutdownError(follow.executionId, follow.agentId), this.settings);
    this.follows.clear();
  }

  /** True when a follow moved on. */
  private poll(): Promise<boolean> {
    return this.read([...this.follows]);
  }

  /** Reads these follows' executions (two statements) and tells their
   * waiters; true when one moved on. */
  private async read(follows: readonly (readonly [number, Follow])[]): Promise<boolean> {
    if (follows.length === 0) return false;
    let progress: StartProgress[];
    const began = startTiming.now();
    try {
      progress = await this.store.readStarts(follows.map(([, follow]) => ({ executionId: follow.executionId, afterSeq: follow.seq })));
      startTiming.sample("filer poll ms", startTiming.now() - began);
      startTiming.sample("filer poll follows", follows.length);
    } catch (error) {
      // The database is unreachable: keep following, poll again later.
      this.settings.logger.debug?.(`[phronomy] reading filed starts failed (polling again): ${error instanceof Error ? error.message : String(error)}`);
      return false;
    }
    const byId = new Map(progress.map((item) => [item.executionId, item]));
    let changed = false;
    for (const [token, follow] of follows) {
      if (!this.follows.has(token)) continue;
      const item = byId.get(follow.executionId);
      if (item !== undefined && this.judge(token, follow, item)) changed = true;
    }
    return changed;
  }

  /** True when the follow moved on (settled, or something to tell). */
  private judge(token: number, follow: Follow, progress: StartProgress): boolean {
    const row = progress.execution;
    let moved = false;
    for (const step of progress.steps) {
      // A poll and a read told of a move may both bring it: told once.
      if (step.seq <= follow.seq) continue;
      follow.seq = step.seq;
      for (const event of eventsOf(follow, step)) emitToWaiter(follow.waiter, event, this.settings);
      moved = true;
    }
    // The core decides what the read becomes (`filedStartFollowVerdict`,
    // decision 0110).
    const facts = filedStartFollowFactsOf(follow.observer, progress, follow.announcedRevision);
    switch (this.settings.core.filedStartFollowVerdict(facts) as FiledFollowVerdict) {
      case FiledFollowVerdict.SettleFromRow:
        this.follows.delete(token);
        settleFromRow(follow.waiter, follow.executionId, row, this.settings);
        return true;
      case FiledFollowVerdict.SettleEnded:
        this.follows.delete(token);
        startTiming.mark(follow.executionId, "noticed");
        settleTerminal(follow, row!, this.settings);
        return true;
      case FiledFollowVerdict.AnnounceSuspended:
        follow.announcedRevision = row!.revision;
        emitToWaiter(
          follow.waiter,
          { type: "approval_required", executionId: follow.executionId, request: row!.approvalRequest as unknown as ApprovalRequest },
          this.settings,
        );
        return true;
      case FiledFollowVerdict.SettleRefused: {
        this.follows.delete(token);
        const record =
          progress.decisionError === null
            ? { code: "INTERNAL" as const, message: `the start of execution ${follow.executionId} was refused without a recorded error` }
            : (JSON.parse(progress.decisionError) as TransferredError);
        settleWaiterWithError(follow.waiter, rebuildError({ executionId: follow.executionId, agentId: follow.agentId, ...record }), this.settings);
        return true;
      }
      case FiledFollowVerdict.RefuseGone:
        this.follows.delete(token);
        settleWaiterWithError(
          follow.waiter,
          follow.gone
            ?? new PhronomyError("INVALID_INPUT", `execution ${follow.executionId} is neither in the store nor filed (purged?)`, {
              executionId: follow.executionId,
              agentId: follow.agentId,
            }),
          this.settings,
        );
        return true;
      case FiledFollowVerdict.FollowFiled:
        follow.waiter.knowExecutionId(follow.executionId);
        return moved;
      default:
        // `Follow`; `None` cannot come of these facts: followed, as before.
        return moved;
    }
  }
}

/** The progress events a durable step stands for, as a live Run heard them. */
function eventsOf(follow: Follow, step: StoredStep): ExecutionEvent[] {
  const executionId = follow.executionId;
  const payload = asObject(step.payload);
  switch (step.kind) {
    case "provider_barrier":
      follow.turns += 1;
      return [{ type: "model_call_started", executionId, callId: String(payload["callId"] ?? ""), turn: follow.turns }];
    case "model_response": {
      const usage = payload["usage"] as unknown as Extract<ExecutionEvent, { type: "model_call_finished" }>["usage"];
      const toolCalls = Array.isArray(payload["toolCalls"]) ? payload["toolCalls"].length : 0;
      const text = typeof payload["text"] === "string" ? payload["text"] : "";
      const callId = String(payload["callId"] ?? "");
      return [
        ...(text.length > 0 ? [{ type: "text_delta" as const, executionId, callId, delta: text }] : []),
        { type: "model_call_finished", executionId, callId, usage, toolCalls },
      ];
    }
    case "tool_barrier":
      return asArray(payload["calls"])
        .map(asObject)
        .map((call) => ({
          type: "tool_call_started",
          executionId,
          callId: String(call["callId"] ?? ""),
          toolName: String(call["toolName"] ?? ""),
          idempotencyKey: `${executionId}:${String(call["callId"] ?? "")}`,
        }));
    case "tool_results":
      return asArray(payload["results"])
        .map(asObject)
        .map((result) => ({
          type: "tool_call_finished",
          executionId,
          callId: String(result["callId"] ?? ""),
          toolName: String(result["toolName"] ?? ""),
          isError: result["isError"] === true,
        }));
    default:
      return [];
  }
}

/** The terminal event a local run would get, then the result from the row. */
function settleTerminal(follow: Follow, row: ExecutionRow, settings: DeliverySettings): void {
  if (row.outcome === "completed") {
    emitToWaiter(follow.waiter, { type: "done", executionId: follow.executionId, output: row.output, usage: row.usage }, settings);
  } else if (row.outcome === "handed_off" && row.metadata.handoff) {
    emitToWaiter(follow.waiter, { type: "handoff", executionId: follow.executionId, handoff: row.metadata.handoff as unknown as HandoffRequest }, settings);
  }
  settleFromRow(follow.waiter, follow.executionId, row, settings);
}

function shutdownError(executionId: string, agentId: string): RuntimeShutdownError {
  return new RuntimeShutdownError(`the wait for execution ${executionId} (a start filed for its owner, which still runs it)`, { executionId, agentId });
}

type JsonObject = { readonly [key: string]: Json };

function asObject(value: Json | undefined): JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
}

function asArray(value: Json | undefined): readonly Json[] {
  return Array.isArray(value) ? value : [];
}
