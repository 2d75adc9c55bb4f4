// The step timeline on the embedded store, keyed by the execution's rowid
// (schema version 14, docs/decisions/0094): the table, the migration that
// rewrites it from the text-keyed table of versions 1–13, the append and
// the reads.
//
// Rules kept here:
// * A step's key is (execution_rowid, seq): the executions row's rowid,
//   which SQLite hands out in increasing order, so the steps of the runs in
//   flight land in the last leaves of the key index, not in a leaf picked
//   by a random execution id (that was a fifth of the pages a run wrote).
//   The search index already keys by the same rowid (`pages.ts`); neither
//   survives a rowid change, and nothing in the store renumbers rows.
// * Every step belongs to an executions row. A deleted execution takes its
//   steps with it (a trigger), so a rowid SQLite hands out again after the
//   newest rows were deleted never finds another execution's steps.
// * A queued message has no executions row yet: its `queued` step waits in
//   its `queued_messages` row (`queued_step`) and becomes the timeline's
//   seq 0 in the transaction that writes the execution (the admission
//   trigger); a read of a queued id reads it from there.

import { StoreError } from "../../errors.js";
import type { StepRecord, StoredStep } from "../records.js";
import type { SqliteConnection } from "./driver.js";
import { jsonText, stepFromRow } from "./rows.js";

/** The timeline's table as of version 14. */
const timelineTable = `
  CREATE TABLE steps (
    execution_rowid INTEGER NOT NULL,
    seq             INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    at              INTEGER NOT NULL,
    payload         TEXT NOT NULL,
    PRIMARY KEY (execution_rowid, seq)
  )`;

/** Migration 14's statements, in order; each is one `exec`. Listed so that a
 * test can stop the migration after any of them. */
export const timelineMigration: readonly string[] = [
  timelineTable.replace("TABLE steps", "TABLE steps_by_rowid"),
  `INSERT INTO steps_by_rowid (execution_rowid, seq, kind, at, payload)
     SELECT executions.rowid, steps.seq, steps.kind, steps.at, steps.payload
     FROM steps JOIN executions ON executions.execution_id = steps.execution_id
     ORDER BY executions.rowid, steps.seq`,
  "ALTER TABLE queued_messages ADD COLUMN queued_step TEXT",
  `UPDATE queued_messages SET queued_step =
     (SELECT payload FROM steps WHERE steps.execution_id = queued_messages.execution_id AND steps.seq = 0 AND steps.kind = 'queued')`,
  "DROP TABLE steps",
  "ALTER TABLE steps_by_rowid RENAME TO steps",
  "DROP TRIGGER queued_message_admitted",
  `CREATE TRIGGER queued_message_admitted AFTER INSERT ON executions
   BEGIN
     INSERT INTO steps (execution_rowid, seq, kind, at, payload)
       SELECT NEW.rowid, 0, 'queued', created_at, queued_step FROM queued_messages
       WHERE execution_id = NEW.execution_id AND queued_step IS NOT NULL;
     DELETE FROM queued_messages WHERE execution_id = NEW.execution_id;
   END`,
  `CREATE TRIGGER steps_of_deleted_execution AFTER DELETE ON executions
   BEGIN
     DELETE FROM steps WHERE execution_rowid = OLD.rowid;
   END`,
];

/** Migration 14's timeline part (`schema.ts`). A step whose
 * execution is neither stored nor queued was unreachable by every read but
 * `listSteps` of its id, and is not carried over (none is written by this
 * code: a step is appended only to a stored or queued execution). */
export function keyTimelineByRowid(connection: SqliteConnection): void {
  for (const statement of timelineMigration) connection.exec(statement);
}

/** Where an execution's next steps go: its executions row's rowid and the
 * seq of its last step (0 for none, or for a queued step's 0). */
export interface TimelineEnd {
  readonly executionRowid: number;
  readonly last: number;
}

/** Appends steps after the execution's last (seq 1 for its first, after a
 * queued step's 0). The executions row must be written first. */
export function appendSteps(connection: SqliteConnection, executionId: string, steps: readonly StepRecord[]): void {
  const found = connection.prepare(lastStep).get(executionId);
  if (found === undefined) throw new StoreError(`cannot append steps to execution ${executionId}: it is not in the store at ${connection.path}`);
  appendStepsAt(connection, timelineEndOf(found), steps);
}

/** Appends steps after `end`, read in this transaction by the statement
 * that read or wrote the executions row already (`selectForUpdate`, a new
 * row's insert), so the append does not read the row again
 * (docs/decisions/0122). */
export function appendStepsAt(connection: SqliteConnection, end: TimelineEnd, steps: readonly StepRecord[]): void {
  let seq = end.last;
  for (let first = 0; first < steps.length; first += stepsPerInsertMax) {
    const rows = Math.min(stepsPerInsertMax, steps.length - first);
    const values: (string | number)[] = [];
    for (let index = first; index < first + rows; index += 1) {
      const step = steps[index]!;
      values.push(end.executionRowid, (seq += 1), step.kind, step.at, jsonText(step.payload));
    }
    connection.prepare(stepInserts[rows - 1]!).run(...values);
  }
}

/** Rows one INSERT of `appendStepsAt` writes at most. A run's writes append
 * two steps each (a barrier: the step it carries and its own; a start: its
 * input and its first barrier; the end: the last answer and the terminal
 * step), so each is one statement, not one a step (docs/decisions/0126:
 * every statement run is a call into the driver, a bind and a reset). */
export const stepsPerInsertMax = 4;

/** `INSERT … VALUES` of 1 to `stepsPerInsertMax` rows: a fixed set of texts. */
const stepInserts: readonly string[] = Array.from(
  { length: stepsPerInsertMax },
  (_, index) => `INSERT INTO steps (execution_rowid, seq, kind, at, payload) VALUES ${Array.from({ length: index + 1 }, () => "(?, ?, ?, ?, ?)").join(", ")}`,
);

/** The `TimelineEnd` of a row with `execution_rowid` and `last` (`lastStep`,
 * `selectForUpdate`). */
export function timelineEndOf(row: { readonly [column: string]: unknown }): TimelineEnd {
  return { executionRowid: Number(row["execution_rowid"]), last: Number(row["last"]) };
}

/** Statements' texts, exported for the plan test (every one reads by index). */
export const lastStep = `
  SELECT executions.rowid AS execution_rowid,
         coalesce((SELECT max(seq) FROM steps WHERE execution_rowid = executions.rowid), 0) AS last
  FROM executions WHERE execution_id = ?`;

/** The queued message's payload of its `queued` step (seq 0). */
export function queuedStepPayload(position: number, interrupt: boolean): string {
  return jsonText({ position, interrupt });
}

/** An execution's timeline in order; a queued message's is its `queued` step. */
export function listSteps(connection: SqliteConnection, executionId: string): StoredStep[] {
  const rows = connection.prepare(timelineOf).all(executionId, executionId);
  return rows.map((row) => stepFromRow(row, connection.path));
}

export const timelineOf = `
  SELECT steps.seq, steps.kind, steps.at, steps.payload
  FROM executions JOIN steps ON steps.execution_rowid = executions.rowid
  WHERE executions.execution_id = ?
  UNION ALL
  SELECT 0 AS seq, 'queued' AS kind, created_at AS at, queued_step AS payload
  FROM queued_messages WHERE execution_id = ? AND queued_step IS NOT NULL
  ORDER BY seq`;

/** Payloads of the execution's steps of one kind, in order. */
export function stepPayloadsOfKind(connection: SqliteConnection, executionId: string, kind: string): string[] {
  return connection
    .prepare(payloadsOfKind)
    .all(executionId, kind)
    .map((row) => String(row["payload"]));
}

export const payloadsOfKind = `
  SELECT steps.payload FROM executions JOIN steps ON steps.execution_rowid = executions.rowid
  WHERE executions.execution_id = ? AND steps.kind = ? ORDER BY steps.seq`;
