// The words of scheduled starts (docs/decisions/0078) a conversation's
// handle and the environment share: what `agent.schedule` takes and what a
// schedule reads as. Kept below both (agent.ts, schedules.ts).

import type { Json } from "../store/records.js";
import type { ScheduledStartOptions, ScheduleFiringOutcome, ScheduleState } from "../store/schedule-records.js";

/** When a schedule starts its conversation, and the start's options. */
export interface ScheduleOptions extends ScheduledStartOptions {
  /** A one-shot schedule: the time of its one start (a past time fires at once). */
  readonly at?: Date | number;
  /** A recurring schedule: five cron fields (minute hour day-of-month month day-of-week). */
  readonly cron?: string;
  /** The cron's time zone: only `"UTC"` (the default) for now. */
  readonly timezone?: string;
}

/** How a schedule's last firing went. */
export interface ScheduleFiring {
  /** The slot fired (epoch ms). */
  readonly slotAt: number;
  /** When its start was made (epoch ms). */
  readonly firedAt: number;
  /** `started` (run here or filed for its owner), `queued` (behind a busy
   * conversation) or `refused` (the busy policy, or the conversation closed). */
  readonly outcome: ScheduleFiringOutcome;
  readonly executionId: string | undefined;
  /** The refusal's code (`AGENT_BUSY`, `QUEUE_FULL`, `AGENT_CLOSED`, …). */
  readonly error: string | undefined;
}

/** A schedule as `env.schedules()` reads it. */
export interface Schedule {
  readonly scheduleId: string;
  readonly agentId: string;
  /** The named definition of the conversation; undefined for an agent defined by id. */
  readonly definition: string | undefined;
  readonly input: Json;
  readonly options: ScheduledStartOptions;
  readonly at: number | undefined;
  readonly cron: string | undefined;
  readonly timezone: string | undefined;
  /** `active`, `cancelled`, or `done` (a one-shot schedule that fired). */
  readonly state: ScheduleState;
  /** The slot it fires next (epoch ms): a firing under way's, else the next one. */
  readonly nextRunAt: number | undefined;
  /** The slot of a firing claimed and not settled yet (a run now asked of
   * another process, or one under way); undefined otherwise. */
  readonly firingSlotAt: number | undefined;
  /** Firings settled so far. */
  readonly firings: number;
  readonly lastFiring: ScheduleFiring | undefined;
  readonly createdAt: number;
}

/** How `env.runSchedule` waits (docs/decisions/0097). */
export interface RunScheduleOptions {
  /** In a process that cannot start the firing itself, how long to wait
   * for the process that does to settle it (default 10,000 ms; 0: answer
   * once claimed). */
  readonly waitMs?: number;
}

/** Which schedules `env.schedules()` lists: by conversation, definition or state, newest first, at most `limit` (1,000). */
export interface ScheduleListFilter {
  readonly agentId?: string;
  readonly definition?: string;
  readonly state?: ScheduleState;
  readonly limit?: number;
}

/** What a conversation's handle asks of the schedules (schedules.ts). */
export interface ScheduleMaker {
  create(agentId: string, definition: string | undefined, input: unknown, options: ScheduleOptions): Promise<Schedule>;
}
