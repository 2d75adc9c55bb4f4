// Scheduled starts of a conversation (docs/decisions/0078): the row a
// schedule is, and what a store that keeps schedules answers. Shared by the
// SQLite and PostgreSQL stores and the runtime's sweep.
//
// A schedule's life, each arrow one compare-and-set on its `revision`:
//
//   active ──claim (slot)──▶ firing ──settle──▶ active (next slot) | done
//     │  ▲                    │  ▲
//     │  └────────────────────┘  └── claimed again once `dueAt` passed
//     │                              (its claimer died or is slow)
//     └──cancel──▶ cancelled
//
// Rules kept here:
// * `dueAt` is when the schedule next needs a process: its next slot, or,
//   while a firing is pending, when that firing may be claimed again. One
//   index on it serves every process's nearest-due read and due batch.
// * A claim writes the slot being fired (`firingSlotAt`) and the slot after
//   it (`nextSlotAt`, computed then) in one commit; the start it files is
//   keyed by (schedule, slot), so a firing claimed twice runs once.

import type { Json } from "./records.js";

/** Due schedules one claim takes at most: the sweep claims again at once
 * after a full batch, so a backlog drains without one read holding many rows. */
export const scheduleClaimBatchMax = 32;
/** Schedules one list answers at most. */
export const scheduleListMax = 1_000;
/** Schedules a store keeps at most per conversation (a guard against a
 * loop making schedules; cancelled and done ones do not count). */
export const schedulesPerConversationMax = 100;

/** A schedule's state: `active` (it fires), `cancelled`, or `done` (a one-shot schedule that fired). */
export type ScheduleState = "active" | "cancelled" | "done";

/** How the last firing's start went: run or filed (`started`), waiting in
 * the conversation's queue (`queued`), or refused by the conversation's
 * busy policy or its state (`refused`, with the error's code). */
export type ScheduleFiringOutcome = "started" | "queued" | "refused";

/** What the start of each firing carries (the transferable start options). */
export interface ScheduledStartOptions {
  readonly timeoutMs?: number;
  readonly approvalPolicy?: "tools" | "always" | "never";
  readonly tokenBudget?: number;
  readonly maxTurns?: number;
  readonly metadata?: { readonly [key: string]: Json };
  readonly onBusy?: "reject" | "enqueue" | "interrupt";
}

export interface ScheduleRow {
  readonly scheduleId: string;
  /** The named definition of the conversation, or undefined for an agent defined by id. */
  readonly definition: string | undefined;
  readonly agentId: string;
  readonly input: Json;
  readonly options: ScheduledStartOptions;
  /** A one-shot schedule's time (epoch ms), or undefined for a recurring one. */
  readonly at: number | undefined;
  readonly cron: string | undefined;
  readonly timezone: string | undefined;
  readonly state: ScheduleState;
  readonly revision: number;
  /** When the schedule next needs a process (undefined once done or cancelled). */
  readonly dueAt: number | undefined;
  /** The slot claimed and not yet settled. */
  readonly firingSlotAt: number | undefined;
  /** The slot after the one being fired (computed by the claim). */
  readonly nextSlotAt: number | undefined;
  readonly firings: number;
  readonly lastSlotAt: number | undefined;
  readonly lastFiredAt: number | undefined;
  readonly lastExecutionId: string | undefined;
  readonly lastOutcome: ScheduleFiringOutcome | undefined;
  readonly lastError: string | undefined;
  readonly createdAt: number;
}

/** A new schedule, as the runtime checked it. */
export interface NewSchedule {
  readonly scheduleId: string;
  readonly definition: string | undefined;
  readonly agentId: string;
  readonly input: Json;
  readonly options: ScheduledStartOptions;
  readonly at: number | undefined;
  readonly cron: string | undefined;
  readonly timezone: string | undefined;
  /** The first slot. */
  readonly dueAt: number;
  readonly createdAt: number;
}

/** A claim the runtime computed for a due row read at `revision`. */
export interface ScheduleClaim {
  readonly scheduleId: string;
  readonly revision: number;
  readonly firingSlotAt: number;
  /** The slot after this one; undefined: none (one-shot, or the cron ended). */
  readonly nextSlotAt: number | undefined;
  /** When the firing may be claimed again if it is not settled by then. */
  readonly retryAt: number;
}

export interface ScheduleSettlement {
  readonly scheduleId: string;
  readonly firingSlotAt: number;
  /** The revision the settling claim wrote: a firing claimed again since
   * (its claimer was slow past `dueAt`) is the later claimer's to settle
   * (docs/decisions/0135). */
  readonly revision: number;
  readonly outcome: ScheduleFiringOutcome;
  readonly executionId: string | undefined;
  readonly error: string | undefined;
  readonly at: number;
}

export interface ScheduleListFilter {
  readonly agentId?: string;
  readonly definition?: string;
  readonly state?: ScheduleState;
  readonly limit?: number;
}

/** Which schedules a process fires: those of the definitions (by name)
 * and agents defined by id in it. */
export interface ScheduleScope {
  readonly definitions: readonly string[];
  readonly agentIds: readonly string[];
}

/** What a store that keeps schedules answers (capability `schedules`). */
export interface ScheduleStore {
  /** Inserts a schedule; "full" (nothing written) when its conversation has
   * `perConversationMax` active ones already. */
  createSchedule(schedule: NewSchedule, perConversationMax: number): Promise<ScheduleRow | "full">;
  getSchedule(scheduleId: string): Promise<ScheduleRow | undefined>;
  listSchedules(filter: ScheduleListFilter): Promise<ScheduleRow[]>;
  /** Cancels an active schedule; the row as it is after (undefined: no such schedule). */
  cancelSchedule(scheduleId: string, at: number): Promise<ScheduleRow | undefined>;
  /** The nearest `dueAt` of an active schedule in scope. */
  nextScheduleDue(scope: ScheduleScope): Promise<number | undefined>;
  /** Active schedules in scope due at `now`, nearest first, at most `limit`. */
  dueSchedules(scope: ScheduleScope, now: number, limit: number): Promise<ScheduleRow[]>;
  /** Applies each claim whose row is still at its revision and active, in
   * one transaction; the rows claimed (as written). */
  claimSchedules(claims: readonly ScheduleClaim[]): Promise<ScheduleRow[]>;
  /** Records how a claimed firing went, if the row is still as that claim
   * wrote it (its revision, active): the schedule moves to its next slot
   * (or is done). False when it was claimed again, settled or cancelled
   * meanwhile. */
  settleScheduleFiring(settlement: ScheduleSettlement): Promise<boolean>;
}

/** Checks a row read back: a programmer error if the store wrote something else. */
export function checkScheduleRow(row: ScheduleRow): ScheduleRow {
  if (row.state === "active" && row.dueAt === undefined) throw new Error(`phronomy: active schedule ${row.scheduleId} has no due time`);
  if (row.state !== "active" && row.dueAt !== undefined) throw new Error(`phronomy: ${row.state} schedule ${row.scheduleId} still has a due time`);
  if ((row.at === undefined) === (row.cron === undefined)) throw new Error(`phronomy: schedule ${row.scheduleId} must have exactly one of at and cron`);
  return row;
}
