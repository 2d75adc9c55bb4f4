// Counts kept by triggers, and the index of executions by definition, on
// the embedded store (docs/decisions/0089).
//
// Rules kept here:
// * `execution_counts` holds one row per (status, outcome) with how many
//   executions have them; triggers on the executions table keep it in the
//   writing transaction (an insert adds one, a delete takes one away, a
//   write that changes the status or the outcome moves one). SQLite has one
//   writer at a time, so the few rows are no point of contention, and a
//   dashboard's refresh reads them instead of counting 100,000 rows.
// * An outcome of NULL is kept as '' (a key column cannot be NULL in a
//   WITHOUT ROWID table); rows that reach 0 stay and are not reported.
// * The definition index is a partial index on the name a named
//   definition's executions carry (`metadata.config.definition`). Until
//   version 14 it was an expression index on the metadata, which every
//   barrier rewrites, so every transaction of a run rewrote a leaf of it (6
//   of the ≈56 pages a run wrote, docs/decisions/0094); from version 14 the
//   name is copied into its own column, `definition`, written only when the
//   row is inserted (the name never changes), and the index is on that.

import type { SqliteConnection } from "./driver.js";

/** What the definition index holds and the page's filter names: the
 * column from version 14; the expression over the metadata before. */
export const definitionExpression = "definition";
const definitionInMetadata = "json_extract(metadata, '$.config.definition')";

/** The `definition` column's value for a row whose start settings are
 * `config` (what `json_extract` of the metadata gives for a name). */
export function definitionOf(config: { readonly [key: string]: unknown }): string | null {
  const name = config["definition"];
  return typeof name === "string" ? name : null;
}

/** Migration 14's part (docs/decisions/0094): the definition's name in a
 * column of its own, filled from the metadata, and the index on it. */
export const definitionMigration: readonly string[] = [
  "ALTER TABLE executions ADD COLUMN definition TEXT",
  `UPDATE executions SET definition = ${definitionInMetadata} WHERE ${definitionInMetadata} IS NOT NULL`,
  "DROP INDEX executions_by_definition",
  "CREATE INDEX executions_by_definition ON executions (definition, created_at, execution_id) WHERE definition IS NOT NULL",
];

export function storeDefinitionColumn(connection: SqliteConnection): void {
  for (const statement of definitionMigration) connection.exec(statement);
}

/** Migration 12: the counts table, its triggers and its first fill; the definition index. */
export function createPageCounts(connection: SqliteConnection): void {
  const add = (row: string) =>
    `INSERT INTO execution_counts (status, outcome, n) VALUES (${row}.status, coalesce(${row}.outcome, ''), 1) ON CONFLICT (status, outcome) DO UPDATE SET n = n + 1;`;
  const remove = (row: string) => `UPDATE execution_counts SET n = n - 1 WHERE status = ${row}.status AND outcome = coalesce(${row}.outcome, '');`;
  connection.exec(`
    CREATE TABLE execution_counts (
      status  TEXT NOT NULL,
      outcome TEXT NOT NULL,
      n       INTEGER NOT NULL,
      PRIMARY KEY (status, outcome)
    ) WITHOUT ROWID;
    INSERT INTO execution_counts (status, outcome, n) SELECT status, coalesce(outcome, ''), count(*) FROM executions GROUP BY 1, 2;
    CREATE TRIGGER execution_counts_insert AFTER INSERT ON executions BEGIN
      ${add("new")}
    END;
    CREATE TRIGGER execution_counts_update AFTER UPDATE OF status, outcome ON executions
    WHEN old.status IS NOT new.status OR old.outcome IS NOT new.outcome BEGIN
      ${remove("old")}
      ${add("new")}
    END;
    CREATE TRIGGER execution_counts_delete AFTER DELETE ON executions BEGIN
      ${remove("old")}
    END;
    CREATE INDEX executions_by_definition ON executions (${definitionInMetadata}, created_at, execution_id)
      WHERE ${definitionInMetadata} IS NOT NULL;
  `);
}

/** Executions per (status, outcome) over the whole store, from the kept counts. */
export function keptCounts(connection: SqliteConnection): { status: string; outcome: string | null; n: number }[] {
  return connection
    .prepare("SELECT status, outcome, n FROM execution_counts WHERE n > 0")
    .all()
    .map((row) => ({ status: String(row["status"]), outcome: row["outcome"] === "" ? null : String(row["outcome"]), n: Number(row["n"]) }));
}
