// The schedules of a PostgreSQL store (docs/decisions/0078): the table,
// and each operation as ONE statement, so every process sharing the
// schema may read due rows and race to claim them. The row's life is drawn
// in `../schedule-records.ts`.
//
// Rules kept here:
// * A claim is a compare-and-set per row on (schedule id, revision,
//   active), all rows of a batch in one `UPDATE … FROM unnest(…)`: of two
//   processes claiming the same due row, exactly one updates it; the other
//   gets no row back and fires nothing.
// * A settlement is a compare-and-set on (schedule id, the pending slot,
//   the revision its claim wrote, active): a claimer whose firing was
//   claimed again settles nothing (docs/decisions/0135).
// * These functions write `schedules` only.

import type pg from "pg";
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

type Queryable = Pick<pg.Pool, "query">;
type Row = Record<string, unknown>;

/** Version 17: the schedules table and its due index. */
export async function createSchedules(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE TABLE schedules (
      schedule_id       text PRIMARY KEY,
      definition        text,
      agent_id          text NOT NULL,
      input             text NOT NULL,
      options           text NOT NULL,
      at_ms             bigint,
      cron              text,
      timezone          text,
      state             text NOT NULL CHECK (state IN ('active', 'cancelled', 'done')),
      revision          bigint NOT NULL,
      due_at            bigint,
      firing_slot_at    bigint,
      next_slot_at      bigint,
      firings           bigint NOT NULL DEFAULT 0,
      last_slot_at      bigint,
      last_fired_at     bigint,
      last_execution_id text,
      last_outcome      text,
      last_error        text,
      created_at        bigint NOT NULL,
      updated_at        bigint NOT NULL
    );
    CREATE INDEX schedules_due ON schedules (due_at) WHERE state = 'active';
    CREATE INDEX schedules_by_agent ON schedules (agent_id, created_at);
  `);
}

const optional = (value: unknown): number | undefined => (value === null || value === undefined ? undefined : Number(value));
const optionalText = (value: unknown): string | undefined => (value === null || value === undefined ? undefined : String(value));

function scheduleOfRow(row: Row): ScheduleRow {
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

export async function createSchedule(pool: Queryable, schedule: NewSchedule, perConversationMax: number): Promise<ScheduleRow | "full"> {
  const inserted = await pool.query<Row>(
    `
    INSERT INTO schedules (schedule_id, definition, agent_id, input, options, at_ms, cron, timezone, state, revision, due_at, created_at, updated_at)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, 'active', 1, $9, $10, $10
    WHERE (SELECT count(*) FROM schedules WHERE agent_id = $3 AND state = 'active') < $11
    RETURNING *
  `,
    [
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
      perConversationMax,
    ],
  );
  const row = inserted.rows[0];
  return row === undefined ? "full" : scheduleOfRow(row);
}

export async function getSchedule(pool: Queryable, scheduleId: string): Promise<ScheduleRow | undefined> {
  const found = await pool.query<Row>("SELECT * FROM schedules WHERE schedule_id = $1", [scheduleId]);
  const row = found.rows[0];
  return row === undefined ? undefined : scheduleOfRow(row);
}

export async function listSchedules(pool: Queryable, filter: ScheduleListFilter, limit: number): Promise<ScheduleRow[]> {
  const found = await pool.query<Row>(
    `
    SELECT * FROM schedules
    WHERE ($1::text IS NULL OR agent_id = $1) AND ($2::text IS NULL OR definition = $2) AND ($3::text IS NULL OR state = $3)
    ORDER BY created_at DESC, schedule_id LIMIT $4
  `,
    [filter.agentId ?? null, filter.definition ?? null, filter.state ?? null, limit],
  );
  return found.rows.map(scheduleOfRow);
}

export async function cancelSchedule(pool: Queryable, scheduleId: string, at: number): Promise<ScheduleRow | undefined> {
  await pool.query(
    `
    UPDATE schedules SET state = 'cancelled', due_at = NULL, firing_slot_at = NULL, next_slot_at = NULL, revision = revision + 1, updated_at = $2
    WHERE schedule_id = $1 AND state = 'active'
  `,
    [scheduleId, at],
  );
  return getSchedule(pool, scheduleId);
}

const inScope = `(definition = ANY($1::text[]) OR (definition IS NULL AND agent_id = ANY($2::text[])))`;

export async function nextScheduleDue(pool: Queryable, scope: ScheduleScope): Promise<number | undefined> {
  const found = await pool.query<Row>(`SELECT due_at FROM schedules WHERE state = 'active' AND ${inScope} ORDER BY due_at LIMIT 1`, [
    scope.definitions,
    scope.agentIds,
  ]);
  return optional(found.rows[0]?.["due_at"]);
}

export async function dueSchedules(pool: Queryable, scope: ScheduleScope, now: number, limit: number): Promise<ScheduleRow[]> {
  const found = await pool.query<Row>(`SELECT * FROM schedules WHERE state = 'active' AND due_at <= $3 AND ${inScope} ORDER BY due_at, schedule_id LIMIT $4`, [
    scope.definitions,
    scope.agentIds,
    now,
    limit,
  ]);
  return found.rows.map(scheduleOfRow);
}

export async function claimSchedules(pool: Queryable, claims: readonly ScheduleClaim[], at: number): Promise<ScheduleRow[]> {
  if (claims.length === 0) return [];
  const claimed = await pool.query<Row>(
    `
    UPDATE schedules SET firing_slot_at = wanted.slot, next_slot_at = wanted.next, due_at = wanted.retry, revision = schedules.revision + 1, updated_at = $6
    FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS wanted(schedule_id, revision, slot, next, retry)
    WHERE schedules.schedule_id = wanted.schedule_id AND schedules.revision = wanted.revision AND schedules.state = 'active'
    RETURNING schedules.*
  `,
    [
      claims.map((claim) => claim.scheduleId),
      claims.map((claim) => claim.revision),
      claims.map((claim) => claim.firingSlotAt),
      claims.map((claim) => claim.nextSlotAt ?? null),
      claims.map((claim) => claim.retryAt),
      at,
    ],
  );
  return claimed.rows.map(scheduleOfRow);
}

export async function settleScheduleFiring(pool: Queryable, settlement: ScheduleSettlement): Promise<boolean> {
  const settled = await pool.query(
    `
    UPDATE schedules SET
      state = CASE WHEN next_slot_at IS NULL THEN 'done' ELSE 'active' END,
      due_at = next_slot_at, next_slot_at = NULL, firing_slot_at = NULL,
      firings = firings + 1, last_slot_at = $2, last_fired_at = $3, last_execution_id = $4, last_outcome = $5, last_error = $6,
      revision = revision + 1, updated_at = $3
    WHERE schedule_id = $1 AND state = 'active' AND firing_slot_at = $2 AND revision = $7
  `,
    [
      settlement.scheduleId,
      settlement.firingSlotAt,
      settlement.at,
      settlement.executionId ?? null,
      settlement.outcome,
      settlement.error ?? null,
      settlement.revision,
    ],
  );
  return settled.rowCount === 1;
}
