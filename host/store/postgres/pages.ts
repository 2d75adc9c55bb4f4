// Paging, search and counts on PostgreSQL (docs/decisions/0082): the
// migration that indexes them, and the reads.
//
// Rules kept here:
// * Every page is one statement ordered by (created_at, execution_id) with
//   a row-value keyset condition, which the index on exactly those columns
//   serves without a sort.
// * The search is PostgreSQL's own text search (`to_tsvector('simple', …)`,
//   no extension to install, no privilege beyond the schema's), over an
//   expression GIN index on the first `searchIndexedCharsMax` characters of
//   input and output: the write path is unchanged, the index follows the
//   row. `simple` folds case and keeps every word (no stemming, no stop
//   words), the same rule the SQLite store's FTS5 index keeps.
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

type Queryable = Pick<pg.Pool, "query">;

const executionColumns =
  "execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, created_at, updated_at";

/** The indexed document; the index and every search name it the same way
 * (the planner matches the expression by its text). An output not yet
 * written is the JSON text `null`: not a word to find. */
const searchDocument = `to_tsvector('simple'::regconfig, left(input, ${searchIndexedCharsMax}) || ' ' || coalesce(left(nullif(output, 'null'), ${searchIndexedCharsMax}), ''))`;

/** Migration: the keyset and outcome indexes and the search index. */
export async function createExecutionPages(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE INDEX executions_by_time ON executions (created_at, execution_id);
    CREATE INDEX executions_by_outcome ON executions (outcome, created_at) WHERE outcome IS NOT NULL;
    CREATE INDEX executions_search ON executions USING gin ((${searchDocument}));
  `);
}

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
  if (query.idPrefix !== undefined) add((p) => `starts_with(execution_id, ${p})`, query.idPrefix);
  if (query.since !== undefined) add((p) => `created_at >= ${p}`, query.since);
  if (query.until !== undefined) add((p) => `created_at < ${p}`, query.until);
  if (query.words.length > 0) add((p) => `${searchDocument} @@ to_tsquery('simple'::regconfig, ${p})`, tsQueryText(query.words));
  const older = query.cursor?.direction !== "before";
  if (query.cursor !== undefined) {
    const { createdAt, executionId } = query.cursor;
    add((time, id) => `(created_at, execution_id) ${older ? "<" : ">"} (${time}::bigint, ${id}::text)`, createdAt, executionId);
  }
  values.push(query.limit + 1);
  const condition = conditions.length === 0 ? "" : `WHERE ${conditions.join(" AND ")}`;
  const order = older ? "DESC" : "ASC";
  const sql = `SELECT ${executionColumns} FROM executions ${condition} ORDER BY created_at ${order}, execution_id ${order} LIMIT $${values.length}`;
  const found = (await pool.query<SqliteRow>(bind(sql, values))).rows;
  const more = found.length > query.limit;
  const rows = found.slice(0, query.limit).map((row) => executionFromRow(row, where));
  return { rows: older ? rows : rows.reverse(), more };
}

/** Counts per status and outcome over the whole store (or one agent's):
 * one statement, one snapshot. */
export async function countExecutions(pool: Queryable, filter: { readonly agentId?: string }): Promise<ExecutionCounts> {
  const byAgent = filter.agentId === undefined ? "" : "WHERE agent_id = $1";
  const andAgent = filter.agentId === undefined ? "" : "AND agent_id = $1";
  const sql = `
    SELECT 's' AS kind, status AS name, count(*) AS n FROM executions ${byAgent} GROUP BY status
    UNION ALL SELECT 'o', outcome, count(*) FROM executions WHERE outcome IS NOT NULL ${andAgent} GROUP BY outcome
    UNION ALL SELECT 'q', 'queued', count(*) FROM queued_messages ${byAgent}`;
  const found = (await pool.query<SqliteRow>(bind(sql, filter.agentId === undefined ? [] : [filter.agentId]))).rows;
  const of = (kind: string) => found.filter((row) => row["kind"] === kind).map((row) => [String(row["name"]), Number(row["n"])] as [string, number]);
  return countsOf(of("s"), of("o"), of("q")[0]?.[1] ?? 0);
}

/** `to_tsquery` text: each word quoted as a lexeme, a prefix, all required.
 * Words are letters and digits only (`searchWords`); quotes doubled anyway. */
function tsQueryText(words: readonly string[]): string {
  return words.map((word) => `'${word.replace(/'/g, "''")}':*`).join(" & ");
}
