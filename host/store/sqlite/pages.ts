// Paging, search and counts on the embedded store (docs/decisions/0082):
// the migration that indexes them, and the reads.
//
// Rules kept here:
// * Every page is one statement ordered by (created_at, execution_id) with
//   a keyset condition, served by the index on exactly those columns (or
//   by the status, outcome or agent index, each ending in created_at).
// * The search index is an FTS5 table over the executions' own rows
//   (contentless, keyed by their rowid), kept off the writing transactions
//   by a sweep since migration 15; a search reads it and the rows not
//   indexed yet (`search-index.ts`, docs/decisions/0095).
// * A search's words reach FTS5 as quoted strings (`"word"*`): a person's
//   text is never FTS5 query syntax.
// * Counts over the whole store are read from the counts the triggers of
//   `page-counts.ts` keep (docs/decisions/0089); one agent's are GROUP BYs
//   over its rows, by the agent index.

import { searchIndexedCharsMax, type CheckedPageQuery, type ExecutionCounts, countsOf } from "../execution-pages.js";
import type { ExecutionRow } from "../records.js";
import type { SqliteConnection, SqliteValue } from "./driver.js";
import { definitionExpression, keptCounts } from "./page-counts.js";
import { executionFromRow } from "./rows.js";
import { searchIndexed, searchSet } from "./search-index.js";

/** Migration: the keyset and outcome indexes, the search table and the
 * triggers that keep it, filled from the rows already stored. */
export function createExecutionPages(connection: SqliteConnection): void {
  // An output not yet written is the JSON text `null`: not a word to find.
  const indexed = (column: string) => `substr(nullif(${column}, 'null'), 1, ${searchIndexedCharsMax})`;
  connection.exec(`
    CREATE INDEX executions_by_time ON executions (created_at, execution_id);
    CREATE INDEX executions_by_outcome ON executions (outcome, created_at) WHERE outcome IS NOT NULL;
  `);
  try {
    connection.exec(
      "CREATE VIRTUAL TABLE execution_search USING fts5 (input, output, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0')",
    );
  } catch (error) {
    // A SQLite built without FTS5 (or older than 3.43): no index; a search
    // then reads the rows (`searchCondition`).
    if (/fts5|contentless_delete/i.test(error instanceof Error ? error.message : String(error))) return;
    throw error;
  }
  connection.exec(`
    CREATE TRIGGER execution_search_insert AFTER INSERT ON executions BEGIN
      INSERT INTO execution_search (rowid, input, output) VALUES (new.rowid, ${indexed("new.input")}, ${indexed("new.output")});
    END;
    CREATE TRIGGER execution_search_update AFTER UPDATE OF input, output ON executions
    WHEN old.input IS NOT new.input OR old.output IS NOT new.output BEGIN
      DELETE FROM execution_search WHERE rowid = old.rowid;
      INSERT INTO execution_search (rowid, input, output) VALUES (new.rowid, ${indexed("new.input")}, ${indexed("new.output")});
    END;
    CREATE TRIGGER execution_search_delete AFTER DELETE ON executions BEGIN
      DELETE FROM execution_search WHERE rowid = old.rowid;
    END;
    INSERT INTO execution_search (rowid, input, output) SELECT rowid, ${indexed("input")}, ${indexed("output")} FROM executions;
  `);
}

/** Matches a search may have and still be read by looking each up
 * (docs/decisions/0089): at about 5 µs a match, 1,000 cost what reading
 * the time index until a page of a word in 1 row of 100 fills does. */
export const searchFewMatches = 1_000;

/** Migration 13 (docs/decisions/0091): the index on `created_at` alone
 * goes. Every read ordered or bounded by `created_at` is served by
 * `executions_by_time` (`created_at, execution_id`), whose first column it
 * is, and each new execution wrote a leaf of it in its preparation's
 * transaction: a page of the ≈51 a run writes to the log. */
export function dropCreationIndex(connection: SqliteConnection): void {
  connection.exec("DROP INDEX IF EXISTS executions_by_creation");
}

/** One page, newest first; the caller checked the query. Reads one row
 * more than the page to know whether more follow. A search reads the
 * index, the rows not indexed yet and the page in one read transaction: a
 * sweep committed meanwhile moves no row from one side to the other. */
export function pageExecutions(connection: SqliteConnection, query: CheckedPageQuery): { rows: ExecutionRow[]; more: boolean } {
  if (query.words.length === 0 || !searchIndexed(connection)) return readPage(connection, query, false);
  connection.prepare("SAVEPOINT search_read").run();
  try {
    return readPage(connection, query, true);
  } finally {
    connection.prepare("RELEASE search_read").run();
  }
}

function readPage(connection: SqliteConnection, query: CheckedPageQuery, indexedSearch: boolean): { rows: ExecutionRow[]; more: boolean } {
  const conditions: string[] = [];
  const parameters: SqliteValue[] = [];
  const add = (condition: string, ...values: SqliteValue[]) => {
    conditions.push(condition);
    parameters.push(...values);
  };
  if (query.status !== undefined) add("status = ?", query.status);
  if (query.outcome !== undefined) add("outcome = ?", query.outcome);
  if (query.agentId !== undefined) add("agent_id = ?", query.agentId);
  if (query.definition !== undefined) add(`${definitionExpression} = ?`, query.definition);
  if (query.idPrefix !== undefined) add("substr(execution_id, 1, ?) = ?", query.idPrefix.length, query.idPrefix);
  if (query.since !== undefined) add("created_at >= ?", query.since);
  if (query.until !== undefined) add("created_at < ?", query.until);
  let few = false;
  if (query.words.length > 0) {
    if (indexedSearch) {
      // Two plans, chosen by how many rows match (counted up to a bound):
      // few — each match looked up by rowid, their keys sorted (cost ∝
      // matches: a rare word no longer reads the whole time index); many —
      // `+rowid`: the page is read in time order, each row checked against
      // the matches (a set with a Bloom filter), stopping at the page's end
      // (a word in 14,000 of 100,000 rows: 21 ms against 230 ms looking
      // every match up, decision 0082). The matches are the index's and
      // those of the rows not indexed yet (`search-index.ts`).
      const searched = searchSet(connection, matchText(query.words), searchFewMatches);
      few = searched.matches <= searchFewMatches;
      add(searched.condition(!few), ...searched.parameters);
    }
    // No index (a SQLite without FTS5 made the file): each word anywhere in the text, read row by row.
    else for (const word of query.words) add("(input LIKE ? OR output LIKE ?)", `%${word}%`, `%${word}%`);
  }
  const older = query.cursor?.direction !== "before";
  if (query.cursor !== undefined) add(`(created_at, execution_id) ${older ? "<" : ">"} (?, ?)`, query.cursor.createdAt, query.cursor.executionId);
  const where = conditions.length === 0 ? "" : `WHERE ${conditions.join(" AND ")}`;
  const order = older ? "DESC" : "ASC";
  // A bounded set of texts: each filter present or not, two orders, two
  // search plans. Looking matches up sorts their keys, then reads the
  // page's rows: inputs and outputs are not carried through the sort.
  const sql = few
    ? `WITH page AS MATERIALIZED (SELECT rowid AS id, created_at AS at, execution_id AS key FROM executions ${where} ORDER BY created_at ${order}, execution_id ${order} LIMIT ?)
       SELECT executions.* FROM page JOIN executions ON executions.rowid = page.id ORDER BY page.at ${order}, page.key ${order}`
    : `SELECT * FROM executions ${where} ORDER BY created_at ${order}, execution_id ${order} LIMIT ?`;
  const found = connection.prepare(sql).all(...parameters, query.limit + 1);
  const more = found.length > query.limit;
  const rows = found.slice(0, query.limit).map((row) => executionFromRow(row, connection.path));
  return { rows: older ? rows : rows.reverse(), more };
}

/** Counts per status and outcome over the whole store (the counts the
 * triggers keep, `page-counts.ts`) or one agent's (its rows, by index). */
export function countExecutions(connection: SqliteConnection, filter: { readonly agentId?: string }): ExecutionCounts {
  if (filter.agentId === undefined) {
    const kept = keptCounts(connection);
    const sum = (key: "status" | "outcome") => {
      const totals = new Map<string, number>();
      for (const row of kept) if (row[key] !== null) totals.set(row[key], (totals.get(row[key]) ?? 0) + row.n);
      return totals;
    };
    const queued = connection.prepare("SELECT count(*) AS n FROM queued_messages").get();
    return countsOf(sum("status"), sum("outcome"), Number(queued?.["n"] ?? 0));
  }
  const byAgent = filter.agentId === undefined ? "" : "WHERE agent_id = ?";
  const outcomeWhere = filter.agentId === undefined ? "WHERE outcome IS NOT NULL" : "WHERE agent_id = ? AND outcome IS NOT NULL";
  const parameters: SqliteValue[] = filter.agentId === undefined ? [] : [filter.agentId];
  const statuses = connection.prepare(`SELECT status, count(*) AS n FROM executions ${byAgent} GROUP BY status`).all(...parameters);
  const outcomes = connection.prepare(`SELECT outcome, count(*) AS n FROM executions ${outcomeWhere} GROUP BY outcome`).all(...parameters);
  const queued = connection.prepare(`SELECT count(*) AS n FROM queued_messages ${byAgent}`).get(...parameters);
  return countsOf(
    statuses.map((row) => [String(row["status"]), Number(row["n"])]),
    outcomes.map((row) => [String(row["outcome"]), Number(row["n"])]),
    Number(queued?.["n"] ?? 0),
  );
}

/** FTS5 query text: each word a quoted string matched as a prefix, all
 * required. Words are letters and digits only (`searchWords`), so the
 * quotes need no escaping; doubled anyway, as FTS5 escapes them. */
function matchText(words: readonly string[]): string {
  return words.map((word) => `"${word.replace(/"/g, '""')}"*`).join(" AND ");
}
