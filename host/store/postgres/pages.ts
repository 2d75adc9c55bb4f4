// Paging, search and counts on PostgreSQL (docs/decisions/0082): the
// migration that indexes them, and the reads.
//
// Rules kept here:
// * Every page is one statement ordered by (created_at, execution_id) with
//   a row-value keyset condition, which the index on exactly those columns
//   serves without a sort.
// * The search is PostgreSQL's own text search (`to_tsvector('simple', …)`,
//   no extension to install, no privilege beyond the schema's) over a
//   `search` column holding the document of the first
//   `searchIndexedCharsMax` characters of input and output, GIN-indexed. A
//   trigger sets it in the writing transaction, and only when a write
//   changes the input or the output (a barrier changes neither), as the
//   SQLite store's triggers do. Stored, not an expression index: a match
//   is rechecked against the stored document, not by parsing the text
//   again (14,000 matches of 100,000 rows: 950 ms with the expression, see
//   decision 0082), and ANALYZE keeps word statistics that let the planner
//   choose between the GIN index and the time order. `simple` folds case
//   and keeps every word (no stemming, no stop words), the SQLite rule.
// * A search reads the newest rows the filter lists in time order, and
//   only when they hold no full page looks every match up by the GIN index
//   (`searchRecentRows`, docs/decisions/0089): PostgreSQL's estimate of a
//   prefix search is the same for every word, so the planner cannot choose.
// * A search's words reach `to_tsquery` as values, each quoted as a
//   lexeme with `:*` (prefix): a person's text is never query syntax.
// * Counts are GROUP BYs over the status and outcome indexes: exact over
//   the whole store, with no counter row every process's writes would
//   contend on (decision 0082 measures them).

import type pg from "pg";
import { searchIndexedCharsMax, type CheckedPageQuery, type ExecutionCounts, countsOf } from "../execution-pages.js";
import type { ExecutionRow } from "../records.js";
import type { SqliteRow } from "../sqlite/driver.js";
import { executionFromRow } from "../sqlite/rows.js";
import { bind } from "./literals.js";
import { definitionExpression } from "./page-definitions.js";

type Queryable = Pick<pg.Pool, "query">;

/** The row's columns, as the page's join names them. */
const executionColumns =
  "execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, page.created_at, updated_at";

/** The document of a row (`row` is NEW in the trigger, the table in the
 * migration). An output not yet written is the JSON text `null`: not a word to find. */
export const documentOf = (row: string): string => documentOfText(`${row}input`, `${row}output`);

/** The same document of an input and an output given as SQL expressions
 * (a write that computes it itself: `search-inline.ts`). */
export const documentOfText = (input: string, output: string): string =>
  `to_tsvector('simple'::regconfig, left(${input}, ${searchIndexedCharsMax}) || ' ' || coalesce(left(nullif(${output}, 'null'), ${searchIndexedCharsMax}), ''))`;

/** Migration: the keyset and outcome indexes, the `search` column, the
 * trigger that keeps it and its index; filled for the rows already stored. */
export async function createExecutionPages(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE INDEX executions_by_time ON executions (created_at, execution_id);
    CREATE INDEX executions_by_outcome ON executions (outcome, created_at) WHERE outcome IS NOT NULL;
    CREATE INDEX executions_by_state ON executions (status, outcome);
    ALTER TABLE executions ADD COLUMN search tsvector;
    CREATE FUNCTION execution_search_document() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.search := ${documentOf("NEW.")};
      RETURN NEW;
    END $$;
    CREATE TRIGGER execution_search_insert BEFORE INSERT ON executions
    FOR EACH ROW EXECUTE FUNCTION execution_search_document();
    CREATE TRIGGER execution_search_update BEFORE UPDATE OF input, output ON executions
    FOR EACH ROW WHEN (OLD.input IS DISTINCT FROM NEW.input OR OLD.output IS DISTINCT FROM NEW.output)
    EXECUTE FUNCTION execution_search_document();
    UPDATE executions SET search = ${documentOf("")};
    CREATE INDEX executions_search ON executions USING gin (search);
  `);
}

/** Rows a search reads in time order before it looks its matches up (docs/decisions/0089). */
export const searchRecentRows = 5_000;

/** One page, newest first; the caller checked the query. */
export async function pageExecutions(pool: Queryable, where: string, query: CheckedPageQuery): Promise<{ rows: ExecutionRow[]; more: boolean }> {
  const conditions: string[] = [];
  const values: unknown[] = [];
  const add = (condition: (...placeholders: string[]) => string, ...given: unknown[]) => {
    const placeholders = given.map((value) => {
      values.push(value);
      return `$${values.length}`;
    });
    conditions.push(condition(...placeholders));
  };
  if (query.status !== undefined) add((p) => `status = ${p}`, query.status);
  if (query.outcome !== undefined) add((p) => `outcome = ${p}`, query.outcome);
  if (query.agentId !== undefined) add((p) => `agent_id = ${p}`, query.agentId);
  if (query.definition !== undefined) add((p) => `${definitionExpression} = ${p}`, query.definition);
  if (query.idPrefix !== undefined) add((p) => `starts_with(execution_id, ${p})`, query.idPrefix);
  if (query.since !== undefined) add((p) => `created_at >= ${p}`, query.since);
  if (query.until !== undefined) add((p) => `created_at < ${p}`, query.until);
  const older = query.cursor?.direction !== "before";
  if (query.cursor !== undefined) {
    const { createdAt, executionId } = query.cursor;
    add((time, id) => `(created_at, execution_id) ${older ? "<" : ">"} (${time}::bigint, ${id}::text)`, createdAt, executionId);
  }
  const filters = conditions.length === 0 ? "" : `WHERE ${conditions.join(" AND ")}`;
  const order = older ? "DESC" : "ASC";
  const keyOrder = `ORDER BY created_at ${order}, execution_id ${order}`;
  /** The page's keys first (narrow rows), then the page's rows by primary
   * key: a search that matches thousands sorts their keys, not their inputs and outputs. */
  const rowsOf = async (keys: string, given: unknown[]) =>
    (
      await pool.query<SqliteRow>(
        bind(
          `WITH page AS MATERIALIZED (${keys})
           SELECT ${executionColumns} FROM page JOIN executions USING (execution_id) ORDER BY page.created_at ${order}, execution_id ${order}`,
          given,
        ),
      )
    ).rows;
  let found: SqliteRow[];
  if (query.words.length === 0) {
    found = await rowsOf(`SELECT execution_id, created_at FROM executions ${filters} ${keyOrder} LIMIT $${values.length + 1}`, [...values, query.limit + 1]);
  } else {
    // PostgreSQL estimates a prefix search (`word:*`) at a fixed share of
    // the rows whatever the word, so it read the time index for a rare
    // word, checking every row (a word in 100 of 100,000 rows: 76 ms; no
    // match: 102 ms, decision 0089). Two plans, in order: the newest
    // `searchRecentRows` rows the filter lists, checked in time order —
    // a page of a word in 1 row of 100 or more; when they hold no full
    // page, every match by the GIN index (a materialized set: the planner
    // cannot read it in time order), their keys sorted.
    const search = `search @@ to_tsquery('simple'::regconfig, $${values.length + 1})`;
    const given = [...values, tsQueryText(query.words), query.limit + 1];
    const limit = `$${values.length + 2}`;
    found = await rowsOf(
      `SELECT execution_id, created_at FROM (SELECT execution_id, created_at, search FROM executions ${filters} ${keyOrder} LIMIT ${searchRecentRows}) recent
       WHERE ${search} ${keyOrder} LIMIT ${limit}`,
      given,
    );
    if (found.length <= query.limit) {
      found = await rowsOf(
        `WITH matches AS MATERIALIZED (SELECT execution_id, created_at FROM executions ${filters === "" ? "WHERE" : `${filters} AND`} ${search})
         SELECT execution_id, created_at FROM matches ${keyOrder} LIMIT ${limit}`,
        given,
      );
    }
  }
  const more = found.length > query.limit;
  const rows = found.slice(0, query.limit).map((row) => executionFromRow(row, where));
  return { rows: older ? rows : rows.reverse(), more };
}

/** Counts per status and outcome over the whole store (or one agent's):
 * one statement, one snapshot. */
export async function countExecutions(pool: Queryable, filter: { readonly agentId?: string }): Promise<ExecutionCounts> {
  const byAgent = filter.agentId === undefined ? "" : "WHERE agent_id = $1";
  // One pass over the (status, outcome) index, index-only once vacuumed.
  const sql = `
    SELECT status, outcome, count(*) AS n FROM executions ${byAgent} GROUP BY status, outcome
    UNION ALL SELECT 'queued', NULL, count(*) FROM queued_messages ${byAgent}`;
  const found = (await pool.query<SqliteRow>(bind(sql, filter.agentId === undefined ? [] : [filter.agentId]))).rows;
  const executions = found.filter((row) => row["status"] !== "queued");
  const sum = (key: "status" | "outcome") => {
    const totals = new Map<string, number>();
    for (const row of executions) if (row[key] !== null) totals.set(String(row[key]), (totals.get(String(row[key])) ?? 0) + Number(row["n"]));
    return totals;
  };
  return countsOf(sum("status"), sum("outcome"), Number(found.find((row) => row["status"] === "queued")?.["n"] ?? 0));
}

/** `to_tsquery` text: each word quoted as a lexeme, a prefix, all required.
 * Words are letters and digits only (`searchWords`); quotes doubled anyway. */
function tsQueryText(words: readonly string[]): string {
  return words.map((word) => `'${word.replace(/'/g, "''")}':*`).join(" & ");
}
