// The schedules of a SQLite store (docs/decisions/0078): the table, and
// each operation as one statement or one IMMEDIATE transaction on the
// owner's connection. The row's life is drawn in `../schedule-records.ts`.
//
// Rules kept here:
// * Every change is a compare-and-set: a claim on (schedule id, revision,
//   active), a settlement on (schedule id, the pending slot, the revision
//   its claim wrote, active): a claimer whose firing was claimed again
//   settles nothing (docs/decisions/0135).
// * Lists of names go in as one JSON parameter (`json_each`), so the SQL
//   texts are fixed (the connection caches statements by text).
// * These functions write `schedules` only.

import type { Json } from "../records.js";
import {
  checkScheduleRow,
  type NewSchedule,
  type ScheduleClaim,
  type ScheduleFiringOutcome,
  type ScheduleListFilter,
  type ScheduleRow,
  type ScheduleScope,
  type ScheduleSettlement,
  type ScheduledStartOptions,
  type ScheduleState,
} from "../schedule-records.js";
import type { SqliteConnection, SqliteRow } from "./driver.js";
import { rollbackQuietly } from "./rollback.js";

/** Version 8: the schedules table and its due index. */
export function createSchedules(connection: SqliteConnection): void {
  connection.exec(`
    CREATE TABLE schedules (
      schedule_id       TEXT PRIMARY KEY NOT NULL,
      definition        TEXT,
      agent_id          TEXT NOT NULL,
      input             TEXT NOT NULL,
      options           TEXT NOT NULL,
      at_ms             INTEGER,
      cron              TEXT,
      timezone          TEXT,
      state             TEXT NOT NULL CHECK (state IN ('active', 'cancelled', 'done')),
      revision          INTEGER NOT NULL,
      due_at            INTEGER,
      firing_slot_at    INTEGER,
      next_slot_at      INTEGER,
      firings           INTEGER NOT NULL DEFAULT 0,
      last_slot_at      INTEGER,
      last_fired_at     INTEGER,
      last_execution_id TEXT,
      last_outcome      TEXT,
      last_error        TEXT,
      created_at        INTEGER NOT NULL,
      updated_at        INTEGER NOT NULL
    );
    CREATE INDEX schedules_due ON schedules (due_at) WHERE state = 'active';
    CREATE INDEX schedules_by_agent ON schedules (agent_id, created_at);
  `);
}

const optional = (value: unknown): number | undefined => (value === null || value === undefined ? undefined : Number(value));
const optionalText = (value: unknown): string | undefined => (value === null || value === undefined ? undefined : String(value));

export function scheduleOfRow(row: SqliteRow): ScheduleRow {
  return checkScheduleRow({
    scheduleId: String(row["schedule_id"]),
    definition: optionalText(row["definition"]),
    agentId: String(row["agent_id"]),
    input: JSON.parse(String(row["input"])) as Json,
    options: JSON.parse(String(row["options"])) as ScheduledStartOptions,
    at: optional(row["at_ms"]),
    cron: optionalText(row["cron"]),
    timezone: optionalText(row["timezone"]),
    state: String(row["state"]) as ScheduleState,
    revision: Number(row["revision"]),
    dueAt: optional(row["due_at"]),
    firingSlotAt: optional(row["firing_slot_at"]),
    nextSlotAt: optional(row["next_slot_at"]),
    firings: Number(row["firings"]),
    lastSlotAt: optional(row["last_slot_at"]),
    lastFiredAt: optional(row["last_fired_at"]),
    lastExecutionId: optionalText(row["last_execution_id"]),
    lastOutcome: optionalText(row["last_outcome"]) as ScheduleFiringOutcome | undefined,
    lastError: optionalText(row["last_error"]),
    createdAt: Number(row["created_at"]),
  });
}

/** Inserts a schedule, refusing past `perConversationMax` active ones of its conversation. */
export function createSchedule(connection: SqliteConnection, schedule: NewSchedule, perConversationMax: number): ScheduleRow | "full" {
  connection.exec("BEGIN IMMEDIATE");
  try {
    const active = connection.prepare("SELECT count(*) AS n FROM schedules WHERE agent_id = ? AND state = 'active'").get(schedule.agentId);
    if (Number(active?.["n"] ?? 0) >= perConversationMax) {
      connection.exec("COMMIT");
      return "full";
    }
    connection
      .prepare(`
      INSERT INTO schedules (schedule_id, definition, agent_id, input, options, at_ms, cron, timezone, state, revision, due_at, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', 1, ?, ?, ?)
    `)
      .run(
        schedule.scheduleId,
        schedule.definition ?? null,
        schedule.agentId,
        JSON.stringify(schedule.input),
        JSON.stringify(schedule.options),
        schedule.at ?? null,
        schedule.cron ?? null,
        schedule.timezone ?? null,
        schedule.dueAt,
        schedule.createdAt,
        schedule.createdAt,
      );
    const row = getSchedule(connection, schedule.scheduleId) as ScheduleRow;
    connection.exec("COMMIT");
    return row;
  } catch (error) {
    rollbackQuietly(connection);
    throw error;
  }
}

export function getSchedule(connection: SqliteConnection, scheduleId: string): ScheduleRow | undefined {
  const row = connection.prepare("SELECT * FROM schedules WHERE schedule_id = ?").get(scheduleId);
  return row === undefined ? undefined : scheduleOfRow(row);
}

export function listSchedules(connection: SqliteConnection, filter: ScheduleListFilter, limit: number): ScheduleRow[] {
  return connection
    .prepare(`
    SELECT * FROM schedules
    WHERE (? IS NULL OR agent_id = ?) AND (? IS NULL OR definition = ?) AND (? IS NULL OR state = ?)
    ORDER BY created_at DESC, schedule_id LIMIT ?
  `)
    .all(
      filter.agentId ?? null,
      filter.agentId ?? null,
      filter.definition ?? null,
      filter.definition ?? null,
      filter.state ?? null,
      filter.state ?? null,
      limit,
    )
    .map(scheduleOfRow);
}

export function cancelSchedule(connection: SqliteConnection, scheduleId: string, at: number): ScheduleRow | undefined {
  connection
    .prepare(`
    UPDATE schedules SET state = 'cancelled', due_at = NULL, firing_slot_at = NULL, next_slot_at = NULL, revision = revision + 1, updated_at = ?
    WHERE schedule_id = ? AND state = 'active'
  `)
    .run(at, scheduleId);
  return getSchedule(connection, scheduleId);
}

/** The schedules of the definitions (first parameter, JSON) and agents defined by id (second) here. */
const inScope = `(definition IN (SELECT value FROM json_each(?)) OR (definition IS NULL AND agent_id IN (SELECT value FROM json_each(?))))`;

export function nextScheduleDue(connection: SqliteConnection, scope: ScheduleScope): number | undefined {
  const row = connection
    .prepare(`SELECT due_at FROM schedules WHERE state = 'active' AND ${inScope} ORDER BY due_at LIMIT 1`)
    .get(JSON.stringify(scope.definitions), JSON.stringify(scope.agentIds));
  return row === undefined ? undefined : Number(row["due_at"]);
}

export function dueSchedules(connection: SqliteConnection, scope: ScheduleScope, now: number, limit: number): ScheduleRow[] {
  return connection
    .prepare(`SELECT * FROM schedules WHERE state = 'active' AND ${inScope} AND due_at <= ? ORDER BY due_at, schedule_id LIMIT ?`)
    .all(JSON.stringify(scope.definitions), JSON.stringify(scope.agentIds), now, limit)
    .map(scheduleOfRow);
}

/** Every claim whose row is still at its revision, in one transaction. */
export function claimSchedules(connection: SqliteConnection, claims: readonly ScheduleClaim[], at: number): ScheduleRow[] {
  connection.exec("BEGIN IMMEDIATE");
  try {
    const claimed: ScheduleRow[] = [];
    const update = connection.prepare(`
      UPDATE schedules SET firing_slot_at = ?, next_slot_at = ?, due_at = ?, revision = revision + 1, updated_at = ?
      WHERE schedule_id = ? AND revision = ? AND state = 'active'
    `);
    for (const claim of claims) {
      const { changes } = update.run(claim.firingSlotAt, claim.nextSlotAt ?? null, claim.retryAt, at, claim.scheduleId, claim.revision);
      if (changes === 1) claimed.push(getSchedule(connection, claim.scheduleId) as ScheduleRow);
    }
    connection.exec("COMMIT");
    return claimed;
  } catch (error) {
    rollbackQuietly(connection);
    throw error;
  }
}

export function settleScheduleFiring(connection: SqliteConnection, settlement: ScheduleSettlement): boolean {
  const { changes } = connection
    .prepare(`
    UPDATE schedules SET
      state = CASE WHEN next_slot_at IS NULL THEN 'done' ELSE 'active' END,
      due_at = next_slot_at, next_slot_at = NULL, firing_slot_at = NULL,
      firings = firings + 1, last_slot_at = ?, last_fired_at = ?, last_execution_id = ?, last_outcome = ?, last_error = ?,
      revision = revision + 1, updated_at = ?
    WHERE schedule_id = ? AND state = 'active' AND firing_slot_at = ? AND revision = ?
  `)
    .run(
      settlement.firingSlotAt,
      settlement.at,
      settlement.executionId ?? null,
      settlement.outcome,
      settlement.error ?? null,
      settlement.at,
      settlement.scheduleId,
      settlement.firingSlotAt,
      settlement.revision,
    );
  return changes === 1;
}
