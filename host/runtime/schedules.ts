// Scheduled starts of a conversation (docs/decisions/0078): the public
// surface — `agent.schedule(input, { at } | { cron })`, `env.schedules()`,
// `env.schedule(id)`, `env.cancelSchedule(id)`, `env.runSchedule(id)` —
// and the sweep it owns (`schedule-sweep.ts`).
//
// Rules kept here:
// * Everything a schedule's start carries is checked when the schedule is
//   made, by the start's own checks: a bad input, option or cron is refused
//   then (InvalidInputError naming it), not at its first firing.
// * Only what can be stored is scheduled: the input as JSON, the start's
//   JSON options (no signal, listener or guardrail: the firing may happen
//   in another process, after a restart).
// * The sweep runs in a process that owns the store and, on PostgreSQL,
//   takes a share of the partitions (not a visitor, not `balance: false`).
// * A cancel or a run now may be asked anywhere (docs/decisions/0097): a
//   cancel is one compare-and-set; a run now this process cannot start is
//   claimed due at once for a process that can, and followed on the row.

import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { ScheduleClaimVerdict, ScheduleFiringFact, ScheduleFiringVerdict, StartAnswer } from "../../assembly/abi.js";
import { InvalidInputError, PhronomyError, StoreError } from "../errors.js";
import { capabilitiesOf } from "../store/capabilities.js";
import type { Json } from "../store/records.js";
import {
  schedulesPerConversationMax,
  scheduleListMax,
  type ScheduledStartOptions,
  type ScheduleRow,
  type ScheduleState,
  type ScheduleStore,
} from "../store/schedule-records.js";
import type { ExecutionStore } from "../store/store.js";
import { validateStartOptions, rejectUnknownKeys } from "./options.js";
import { firingRetryMs, ScheduleSweep, type ScheduleSweepHost } from "./schedule-sweep.js";
import { claimOf, firstSlotOf, scheduleFactsOf } from "./schedule-slots.js";
import { parseCron } from "./cron.js";
import { startInputOf } from "./start-input.js";
import type { RunScheduleOptions, Schedule, ScheduleListFilter, ScheduleOptions } from "./schedule-words.js";

export type { RunScheduleOptions, Schedule, ScheduleFiring, ScheduleListFilter, ScheduleOptions } from "./schedule-words.js";

const scheduleOptionKeys = ["at", "cron", "timezone", "timeoutMs", "approvalPolicy", "tokenBudget", "maxTurns", "metadata", "onBusy"];
const filterKeys = ["agentId", "definition", "state", "limit"];
const states: readonly ScheduleState[] = ["active", "cancelled", "done"];

/** What the schedules need of the environment. */
export interface SchedulingHost extends Omit<ScheduleSweepHost, "store" | "singleOwner"> {
  readonly store: ExecutionStore;
  /** Whether this process fires schedules (owner; PostgreSQL: takes a share). */
  readonly fires: boolean;
  /** Whether other processes may fire this store's schedules (a visitor's
   * owner, PostgreSQL's processes): a run now claimed here for them is
   * waited for (docs/decisions/0097). */
  readonly firedElsewhere: boolean;
  /** False once the environment closes: a wait for another process stops. */
  isOpen(): boolean;
  assertOpen(what: string): void;
  assertOwner(what: string): void;
  assertStoreWritable(what: string): void;
}

export class Scheduling {
  /** @internal The sweep, when this process fires schedules. */
  readonly sweep: ScheduleSweep | undefined;

  constructor(private readonly host: SchedulingHost) {
    const store = scheduleStoreOf(host.store);
    this.sweep = store !== undefined && host.fires ? new ScheduleSweep({ ...host, store, singleOwner: !capabilitiesOf(host.store).leases }) : undefined;
  }

  /** Looks for due schedules now (the environment opened, or a definition was added). */
  start(): void {
    this.sweep?.wake();
  }

  /** `agent.schedule(input, options)`: a start of the conversation at a time, or on a cron schedule. */
  async create(agentId: string, definition: string | undefined, input: unknown, options: ScheduleOptions): Promise<Schedule> {
    const what = `agent "${agentId}".schedule()`;
    this.assertWritable(what);
    const store = this.storeFor(what);
    const now = Date.now();
    const checked = checkScheduleOptions(options, now, what);
    startInputOf(input as Parameters<typeof startInputOf>[0], `${what}: input`);
    if (!isJsonSafe(input))
      throw new InvalidInputError(`${what}: the input must be JSON (text, model messages or parts with data as base64 text), to be stored until it fires`, {
        agentId,
      });
    const created = await store.createSchedule(
      { scheduleId: randomUUID(), definition, agentId, input: input as Json, createdAt: now, ...checked },
      schedulesPerConversationMax,
    );
    if (created === "full") {
      throw new PhronomyError(
        "CAPACITY",
        `conversation "${agentId}" has ${schedulesPerConversationMax} active schedules already; cancel one (env.cancelSchedule) before making another`,
        {
          agentId,
          details: { schedulesMax: schedulesPerConversationMax },
        },
      );
    }
    this.sweep?.armAt(created.dueAt as number);
    return scheduleOf(created);
  }

  async list(filter: ScheduleListFilter = {}): Promise<Schedule[]> {
    const what = "env.schedules()";
    this.host.assertOpen(what);
    checkFilter(filter, what);
    const rows = await this.readerFor(what).listSchedules(filter);
    return rows.map(scheduleOf);
  }

  async get(scheduleId: string): Promise<Schedule | undefined> {
    const what = "env.schedule()";
    this.host.assertOpen(what);
    const row = await this.readerFor(what).getSchedule(scheduleId);
    return row === undefined ? undefined : scheduleOf(row);
  }

  /** Cancels a schedule; a firing under way still starts its conversation
   * once. A SQLite visitor cancels too: one compare-and-set on the
   * schedule's row, as the owner's (docs/decisions/0097). */
  async cancel(scheduleId: string): Promise<Schedule> {
    const what = "env.cancelSchedule()";
    this.assertActing(what);
    const row = await this.actionsFor(what).cancelSchedule(scheduleId, Date.now());
    if (row === undefined) throw unknownSchedule(scheduleId, what);
    return scheduleOf(row);
  }

  /** Fires an active schedule now (its next slot kept); settles once the
   * firing's start was made or refused, with the schedule after it
   * (`lastFiring`). A process that cannot start it — it does not define
   * the conversation's agent, fires no schedules, or visits the store —
   * claims the firing due at once for a process that does, and, where
   * another process may fire it (a visitor's owner, PostgreSQL), waits
   * up to `waitMs` for that firing to be settled; a schedule still
   * `firing` after it is the answer that it has not been (docs/decisions/0097). */
  async runNow(scheduleId: string, options: RunScheduleOptions = {}): Promise<Schedule> {
    const what = "env.runSchedule()";
    this.assertActing(what);
    const waitMs = checkWaitMs(options, what);
    const store = this.actionsFor(what);
    const row = await store.getSchedule(scheduleId);
    if (row === undefined) throw unknownSchedule(scheduleId, what);
    if (row.state !== "active") {
      throw new InvalidInputError(`${what}: schedule ${scheduleId} is ${row.state}; only an active schedule runs`, {
        details: { scheduleId, state: row.state },
      });
    }
    const now = Date.now();
    const firesHere = this.sweep !== undefined && this.host.defines(row);
    // The core decides the slot (docs/decisions/0087, 0098): at now, the next
    // slot kept, or the next slot if it is due; never the last slot again.
    // One this process cannot start is due at once for one that can.
    const verdict = this.host.core.scheduleClaimVerdict(scheduleFactsOf(row, now, { runNow: true, ownerGone: false })) as ScheduleClaimVerdict;
    if (verdict === ScheduleClaimVerdict.RefuseFiredThisInstant) {
      throw new InvalidInputError(
        `${what}: schedule ${scheduleId} fired at this instant already (slot ${new Date(row.lastSlotAt as number).toISOString()}, ${row.lastOutcome ?? "settled"}); read it with env.schedule(), or run it again later`,
        { details: { scheduleId, state: row.state, reason: "fired_this_instant", slotAt: row.lastSlotAt } },
      );
    }
    const claim = claimOf(row, verdict, now, firesHere ? now + firingRetryMs : now);
    if (claim === undefined)
      throw new InvalidInputError(`${what}: schedule ${scheduleId} is firing now; wait for it`, { details: { scheduleId, state: "firing" } });
    const [claimed] = await store.claimSchedules([claim]);
    const facts = claimed === undefined ? 0 : ScheduleFiringFact.Claimed;
    if (claimed === undefined || this.host.core.scheduleFiringVerdict(facts, StartAnswer.None) === ScheduleFiringVerdict.Skip)
      throw new InvalidInputError(`${what}: schedule ${scheduleId} changed meanwhile (fired or cancelled); read it again`, { details: { scheduleId } });
    if (firesHere) {
      await (this.sweep as ScheduleSweep).fireClaimed(claimed);
      return scheduleOf((await store.getSchedule(scheduleId)) ?? claimed);
    }
    if (!this.host.firedElsewhere) return scheduleOf(claimed); // a single owner that cannot start it: its next owner does
    return scheduleOf(await this.settledElsewhere(store, claimed, now + waitMs));
  }

  /** The schedule once the firing claimed for another process is settled
   * (or cancelled), or as it is at `until`, or when this environment closes. */
  private async settledElsewhere(store: ScheduleReader, claimed: ScheduleRow, until: number): Promise<ScheduleRow> {
    let row = claimed;
    let pauseMs = settledPollMsMin;
    while (row.firingSlotAt === claimed.firingSlotAt && row.state === "active" && Date.now() < until && this.host.isOpen()) {
      await sleep(Math.min(pauseMs, Math.max(0, until - Date.now())));
      pauseMs = Math.min(pauseMs * 2, settledPollMsMax);
      row = (await store.getSchedule(claimed.scheduleId)) ?? row;
    }
    return row;
  }
  /** Stops the timer at once (`env.close()`); `close` waits for the firings under way. */
  halt(): void {
    this.sweep?.halt();
  }

  close(): Promise<void> {
    return this.sweep?.close() ?? Promise.resolve();
  }

  private assertWritable(what: string): void {
    this.host.assertOpen(what);
    this.host.assertOwner(what);
    this.host.assertStoreWritable(what);
  }

  /** A cancel or a run now: the owner's, or a visitor's asking for it. */
  private assertActing(what: string): void {
    this.host.assertOpen(what);
    this.host.assertStoreWritable(what);
  }

  /** The owner's store, or a visitor's actions (docs/decisions/0097). */
  private actionsFor(what: string): ScheduleActions {
    const capabilities = capabilitiesOf(this.host.store);
    if (capabilities.scheduleActions === true && capabilities.schedules !== true) return this.host.store as unknown as ScheduleActions;
    return this.storeFor(what);
  }

  /** The owner's store, or a visitor's reads (docs/decisions/0088). */
  private readerFor(what: string): ScheduleReader {
    const capabilities = capabilitiesOf(this.host.store);
    if (capabilities.scheduleReads === true && capabilities.schedules !== true) return this.host.store as unknown as ScheduleReader;
    return this.storeFor(what);
  }

  private storeFor(what: string): ScheduleStore {
    const store = scheduleStoreOf(this.host.store);
    if (store === undefined)
      throw new StoreError(`${what}: the store ${this.host.store.path ?? ""} keeps no schedules (it does not declare the "schedules" capability)`);
    return store;
  }
}

/** Reads of schedules: a store that keeps them, or a SQLite visitor of one. */
type ScheduleReader = Pick<ScheduleStore, "getSchedule" | "listSchedules">;
/** A cancel and a run now's claim, beside the reads: a store that keeps
 * schedules, or a SQLite visitor of one (docs/decisions/0097). */
type ScheduleActions = ScheduleReader & Pick<ScheduleStore, "cancelSchedule" | "claimSchedules">;

/** How long `env.runSchedule` waits, by default, for another process to
 * settle the firing it claimed for it: the time a firing waits for its
 * claimer before any process may claim it again. */
export const runScheduleWaitMsDefault = firingRetryMs;
/** The longest wait `env.runSchedule` takes (an hour: a caller that wants
 * longer reads the schedule again). */
export const runScheduleWaitMsMax = 3_600_000;
/** The first and the longest pause between reads of a firing settled elsewhere. */
const settledPollMsMin = 25;
const settledPollMsMax = 1_000;

function checkWaitMs(options: RunScheduleOptions, what: string): number {
  if (typeof options !== "object" || options === null) throw new InvalidInputError(`${what}: options must be an object`);
  rejectUnknownKeys(options, ["waitMs"], what);
  const { waitMs = runScheduleWaitMsDefault } = options;
  if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > runScheduleWaitMsMax) {
    throw new InvalidInputError(`${what}: "waitMs" must be an integer from 0 to ${runScheduleWaitMsMax}, got ${String(waitMs)}`, {
      details: { field: "waitMs" },
    });
  }
  return waitMs;
}

function scheduleStoreOf(store: ExecutionStore): ScheduleStore | undefined {
  return capabilitiesOf(store).schedules === true ? (store as unknown as ScheduleStore) : undefined;
}

function unknownSchedule(scheduleId: string, what: string): InvalidInputError {
  return new InvalidInputError(`${what}: no schedule ${scheduleId} in the store`, { details: { scheduleId, reason: "not_found" } });
}

/** The schedule's timing and start options, checked; the first slot. */
function checkScheduleOptions(
  options: ScheduleOptions,
  now: number,
  what: string,
): { at: number | undefined; cron: string | undefined; timezone: string | undefined; dueAt: number; options: ScheduledStartOptions } {
  if (typeof options !== "object" || options === null) throw new InvalidInputError(`${what}: options must be an object with "at" or "cron"`);
  rejectUnknownKeys(options, scheduleOptionKeys, what);
  const { at, cron, timezone, ...start } = options;
  validateStartOptions(start, what);
  if (timezone !== undefined && timezone !== "UTC") {
    throw new InvalidInputError(`${what}: "timezone" must be "UTC" (the only one supported), got ${JSON.stringify(timezone)}`, {
      details: { field: "timezone" },
    });
  }
  if ((at === undefined) === (cron === undefined))
    throw new InvalidInputError(`${what}: give exactly one of "at" (a Date: one start) and "cron" (a recurring one)`);
  if (start.metadata !== undefined && !isJsonSafe(start.metadata)) throw new InvalidInputError(`${what}: "metadata" must be JSON`);
  if (cron !== undefined) {
    const dueAt = firstSlotOf(cron, now, what);
    return { at: undefined, cron: parseCron(cron, what).source, timezone, dueAt, options: start };
  }
  const time = at instanceof Date ? at.getTime() : at;
  if (typeof time !== "number" || !Number.isSafeInteger(time) || time < 0) {
    throw new InvalidInputError(`${what}: "at" must be a valid Date (or epoch milliseconds), got ${String(at)}`, { details: { field: "at" } });
  }
  return { at: time, cron: undefined, timezone, dueAt: time, options: start };
}

function checkFilter(filter: ScheduleListFilter, what: string): void {
  if (typeof filter !== "object" || filter === null) throw new InvalidInputError(`${what}: the filter must be an object`);
  rejectUnknownKeys(filter, filterKeys, what);
  if (filter.state !== undefined && !states.includes(filter.state)) {
    throw new InvalidInputError(`${what}: "state" must be one of ${states.join(", ")}, got ${JSON.stringify(filter.state)}`);
  }
  if (filter.limit !== undefined && (!Number.isInteger(filter.limit) || filter.limit < 1 || filter.limit > scheduleListMax)) {
    throw new InvalidInputError(`${what}: "limit" must be an integer from 1 to ${scheduleListMax}, got ${String(filter.limit)}`);
  }
  for (const key of ["agentId", "definition"] as const) {
    if (filter[key] !== undefined && typeof filter[key] !== "string") throw new InvalidInputError(`${what}: "${key}" must be a string`);
  }
}

function isJsonSafe(value: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((item) => isJsonSafe(item, depth + 1));
  if (typeof value !== "object") return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return false;
  return Object.values(value as object).every((item) => item === undefined || isJsonSafe(item, depth + 1));
}

function scheduleOf(row: ScheduleRow): Schedule {
  return {
    scheduleId: row.scheduleId,
    agentId: row.agentId,
    definition: row.definition,
    input: row.input,
    options: row.options,
    at: row.at,
    cron: row.cron,
    timezone: row.timezone,
    state: row.state,
    nextRunAt: row.state !== "active" ? undefined : (row.firingSlotAt ?? row.dueAt),
    firingSlotAt: row.state !== "active" ? undefined : row.firingSlotAt,
    firings: row.firings,
    lastFiring:
      row.lastFiredAt === undefined || row.lastOutcome === undefined
        ? undefined
        : { slotAt: row.lastSlotAt as number, firedAt: row.lastFiredAt, outcome: row.lastOutcome, executionId: row.lastExecutionId, error: row.lastError },
    createdAt: row.createdAt,
  };
}
