// The embedded store's search index kept off the run's transactions
// (docs/decisions/0095): a run's writes mark nothing new in FTS5; a sweep
// indexes what they wrote, in batches, in transactions of its own; a search
// reads the index and, beside it, the rows not indexed yet.
//
// Rules kept here:
// * `execution_search_mark` holds one number, the mark: every execution
//   with a rowid at or below it is either indexed with its present text or
//   listed in `execution_search_pending`. Rows above it are not indexed
//   (new ones: an insert writes nothing for the search). Rowids only grow
//   (SQLite gives a new row the largest rowid plus one), except after the
//   largest row is deleted: the delete trigger then lowers the mark to the
//   largest left, so a rowid given again is above it.
// * `execution_search_pending` lists rows at or below the mark whose index
//   entry is missing or stale: updated text, a deleted row, a running one
//   the sweep left for later; `indexed` says whether the index holds an
//   entry for it (to be deleted before the row is indexed again). Only a
//   write that changes the input or the output of a row already below the
//   mark, or deletes it, adds one (one row of a small table, and none when
//   the row is listed already).
// * The sweep runs on the store's worker (or inline with no worker, asked
//   for by the offload), in a transaction of its own: it moves the mark over
//   the next rows, then indexes listed rows in rowid order. A row still
//   running (preparing or active) and younger than `sweepHoldRunningMs` is
//   left listed: its output comes at its end, and indexing it once then
//   costs the run nothing. A crash between a write and the sweep leaves
//   the mark and the list as committed: the next sweep resumes from them.
// * A search reads, in one read transaction, the index for rows at or below
//   the mark and not listed, and the rest (rows above the mark, listed rows
//   that exist) through a temporary FTS5 table filled from their text, on
//   the reading connection only (it writes nothing to the store's file; a
//   read-only visitor can do it). The same tokenizer on both sides: a
//   search finds the same rows before and after the sweep.

import { searchIndexedCharsMax } from "../execution-pages.js";
import type { SqliteConnection, SqliteValue } from "./driver.js";

/** The tokenizer of the index and of a search's temporary table. */
const tokenizer = "tokenize = 'unicode61 remove_diacritics 0'";

/** The text indexed for a column: an output not yet written is the JSON
 * text `null`, not a word to find; only the first characters are indexed. */
const indexed = (column: string) => `substr(nullif(${column}, 'null'), 1, ${searchIndexedCharsMax})`;

/** Rows a sweep moves the mark over, and listed rows it indexes, at most:
 * one transaction of a few milliseconds, one FTS5 segment. */
export const sweepRowsMax = 512;

/** A running execution younger than this is left for a later sweep (its
 * output comes at its end); an older one is indexed as it is, and again
 * when its text changes. Bounds what a search reads outside the index to
 * the runs of the last minute still running. */
export const sweepHoldRunningMs = 60_000;

/** Migration 15 (docs/decisions/0095): the search index is no longer kept
 * by triggers in the writing transaction. Everything indexed until now
 * stays: the mark starts at the largest rowid. A file without the index (a
 * SQLite without FTS5 made it) is left as it is. */
export function deferSearchIndex(connection: SqliteConnection): void {
  if (connection.prepare("SELECT 1 AS found FROM sqlite_schema WHERE type = 'table' AND name = 'execution_search'").get() === undefined) return;
  const listUnlessListed = `INSERT INTO execution_search_pending (execution_rowid, indexed)
      SELECT old.rowid, 1 WHERE NOT EXISTS (SELECT 1 FROM execution_search_pending WHERE execution_rowid = old.rowid);`;
  const largest = "coalesce((SELECT max(rowid) FROM executions), 0)";
  connection.exec(`
    DROP TRIGGER IF EXISTS execution_search_insert;
    DROP TRIGGER IF EXISTS execution_search_update;
    DROP TRIGGER IF EXISTS execution_search_delete;
    CREATE TABLE execution_search_mark (
      only INTEGER PRIMARY KEY CHECK (only = 1),
      mark INTEGER NOT NULL
    );
    INSERT INTO execution_search_mark (only, mark) VALUES (1, ${largest});
    CREATE TABLE execution_search_pending (
      execution_rowid INTEGER PRIMARY KEY,
      indexed         INTEGER NOT NULL
    );
    CREATE TRIGGER execution_search_update AFTER UPDATE OF input, output ON executions
    WHEN (old.input IS NOT new.input OR old.output IS NOT new.output) AND old.rowid <= (SELECT mark FROM execution_search_mark) BEGIN
      ${listUnlessListed}
    END;
    CREATE TRIGGER execution_search_delete AFTER DELETE ON executions
    WHEN old.rowid <= (SELECT mark FROM execution_search_mark) BEGIN
      ${listUnlessListed}
      UPDATE execution_search_mark SET mark = ${largest} WHERE mark > ${largest};
    END;
  `);
}

const indexedConnections = new WeakMap<SqliteConnection, boolean>();

/** Whether the file has the deferred search index (migration 15 ran with FTS5 there). */
export function searchIndexed(connection: SqliteConnection): boolean {
  let found = indexedConnections.get(connection);
  if (found === undefined) {
    found = connection.prepare("SELECT 1 AS found FROM sqlite_schema WHERE type = 'table' AND name = 'execution_search_mark'").get() !== undefined;
    indexedConnections.set(connection, found);
  }
  return found;
}

export interface SweepResult {
  /** Rows indexed (or whose stale entry was removed) by this sweep. */
  readonly indexed: number;
  /** Whether work was left for another sweep (a batch was full). */
  readonly more: boolean;
}

const heldRunning = "e.status IN ('preparing', 'active') AND e.created_at > ?";
const sweepState = `SELECT (SELECT mark FROM execution_search_mark) AS mark, (SELECT max(rowid) FROM executions) AS last,
  EXISTS (SELECT 1 FROM execution_search_pending p LEFT JOIN executions e ON e.rowid = p.execution_rowid
          WHERE p.indexed = 1 OR e.rowid IS NULL OR NOT (${heldRunning})) AS due`;
const nextMark = "SELECT max(rowid) AS mark FROM (SELECT rowid FROM executions WHERE rowid > ? ORDER BY rowid LIMIT ?)";
const listNext = "INSERT OR IGNORE INTO execution_search_pending (execution_rowid, indexed) SELECT rowid, 0 FROM executions WHERE rowid > ? AND rowid <= ?";
const moveMark = "UPDATE execution_search_mark SET mark = ?";
const dueCondition = `(p.indexed = 1 OR e.rowid IS NULL OR NOT (${heldRunning}))`;
/** The last rowid of this sweep's batch of listed rows, and its size. */
const dueBatch = `SELECT max(id) AS until, count(*) AS n FROM (SELECT p.execution_rowid AS id
  FROM execution_search_pending p LEFT JOIN executions e ON e.rowid = p.execution_rowid
  WHERE ${dueCondition} ORDER BY p.execution_rowid LIMIT ?)`;
/** The batch: listed rows due, up to a rowid (the held ones between stay). */
const inBatch = (which: string) => `SELECT p.execution_rowid FROM execution_search_pending p LEFT JOIN executions e ON e.rowid = p.execution_rowid
  WHERE p.execution_rowid <= ? AND ${dueCondition}${which}`;
// One statement each: FTS5 flushes its pending terms into a new segment at
// every statement's savepoint, so a row at a time would cost a flush a row.
const deleteEntries = `DELETE FROM execution_search WHERE rowid IN (${inBatch(" AND p.indexed = 1")})`;
const insertEntries = `INSERT INTO execution_search (rowid, input, output)
  SELECT rowid, ${indexed("input")}, ${indexed("output")} FROM executions WHERE rowid IN (${inBatch("")})`;
const unlistBatch = `DELETE FROM execution_search_pending WHERE execution_rowid IN (${inBatch("")})`;

/** One sweep: moves the mark over at most `sweepRowsMax` new rows and
 * indexes at most `sweepRowsMax` listed ones, in one transaction. Writes
 * nothing (no transaction) when there is nothing to do. `now` bounds which
 * running rows are held (ms since the epoch, as `created_at`). */
export function sweepSearchIndex(connection: SqliteConnection, now: number): SweepResult {
  if (!searchIndexed(connection)) return { indexed: 0, more: false };
  const youngSince = now - sweepHoldRunningMs;
  const before = connection.prepare(sweepState).get(youngSince);
  if (Number(before?.["last"] ?? 0) <= Number(before?.["mark"] ?? 0) && Number(before?.["due"] ?? 0) === 0) return { indexed: 0, more: false };
  connection.prepare("BEGIN IMMEDIATE").run();
  try {
    const state = connection.prepare(sweepState).get(youngSince);
    const mark = Number(state?.["mark"] ?? 0);
    const last = Number(state?.["last"] ?? 0);
    let moved = mark;
    if (last > mark) {
      moved = Number(connection.prepare(nextMark).get(mark, sweepRowsMax)?.["mark"] ?? mark);
      connection.prepare(listNext).run(mark, moved);
      connection.prepare(moveMark).run(moved);
    }
    const batch = connection.prepare(dueBatch).get(youngSince, sweepRowsMax);
    const due = Number(batch?.["n"] ?? 0);
    if (due > 0) {
      const until = Number(batch?.["until"]);
      connection.prepare(deleteEntries).run(until, youngSince);
      connection.prepare(insertEntries).run(until, youngSince);
      connection.prepare(unlistBatch).run(until, youngSince);
    }
    connection.prepare("COMMIT").run();
    return { indexed: due, more: last > moved || due === sweepRowsMax };
  } catch (error) {
    connection.prepare("ROLLBACK").run();
    throw error;
  }
}

/** The condition a searched page adds, and its values: rows whose words
 * match, from the index or from the rows not indexed yet. The caller holds
 * a read transaction over `restOf` and the page's statement. */
export interface SearchSet {
  /** `rowid IN (…)`, with `+rowid` when `byTime` (the page is read in time
   * order, each row checked against the matches). */
  readonly condition: (byTime: boolean) => string;
  readonly parameters: readonly SqliteValue[];
  /** Matches, counted up to `bound + 1`. */
  readonly matches: number;
}

const createRest = `CREATE VIRTUAL TABLE IF NOT EXISTS temp.execution_search_rest USING fts5 (input, output, content = '', ${tokenizer})`;
const emptyRest = "INSERT INTO temp.execution_search_rest (execution_search_rest) VALUES ('delete-all')";
const fillRest = `INSERT INTO temp.execution_search_rest (rowid, input, output)
  SELECT rowid, ${indexed("input")}, ${indexed("output")} FROM executions
  WHERE rowid IN (SELECT rowid FROM executions WHERE rowid > ? UNION SELECT execution_rowid FROM execution_search_pending)`;
const markNow = "SELECT mark FROM execution_search_mark";
const indexMatches = "SELECT rowid FROM execution_search WHERE execution_search MATCH ? AND rowid <= ?";
const restMatches = "SELECT rowid FROM temp.execution_search_rest WHERE execution_search_rest MATCH ?";
const countIndexed = `SELECT count(*) AS n FROM (${indexMatches} LIMIT ?)`;
const countRest = `SELECT count(*) AS n FROM (${restMatches} LIMIT ?)`;

/** The rows matching `match` (FTS5 query text), counted up to `bound + 1`.
 * Fills the connection's temporary table with the rows not indexed yet. */
export function searchSet(connection: SqliteConnection, match: string, bound: number): SearchSet {
  connection.exec(createRest);
  connection.prepare(emptyRest).run();
  const mark = Number(connection.prepare(markNow).get()?.["mark"] ?? 0);
  const rest = connection.prepare(fillRest).run(mark).changes;
  const inIndex = Number(connection.prepare(countIndexed).get(match, mark, bound + 1)?.["n"] ?? 0);
  if (rest === 0) {
    // Everything is indexed: every listed rowid is a deleted row's, whose
    // stale entry names no row (a rowid given again would be above the mark).
    return { condition: (byTime) => `${byTime ? "+" : ""}rowid IN (${indexMatches})`, parameters: [match, mark], matches: inIndex };
  }
  const inRest = Number(connection.prepare(countRest).get(match, bound + 1)?.["n"] ?? 0);
  // A listed row is judged by its present text (the rest) alone: its entry
  // in the index, if any, is stale.
  return {
    condition: (byTime) => {
      const row = byTime ? "+rowid" : "rowid";
      return `${row} IN (${indexMatches} UNION ALL ${restMatches}) AND (+rowid NOT IN (SELECT execution_rowid FROM execution_search_pending) OR +rowid IN (${restMatches}))`;
    },
    parameters: [match, mark, match, match],
    matches: inIndex + inRest,
  };
}
