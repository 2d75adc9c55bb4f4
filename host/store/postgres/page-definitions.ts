// The index of executions by definition on PostgreSQL (docs/decisions/0089):
// an expression index on the name a named definition's executions carry
// (`metadata.config.definition`), in keyset order, so a page of one
// definition's conversations is read like a page of one agent's. Not
// partial: ANALYZE keeps statistics of a plain expression index's values,
// and without them the planner took every definition for 0.5% of the rows
// and sorted all of one definition's rows for a search within it (158 ms
// against 33 ms at 100,000).

import type pg from "pg";

/** What the index holds and the page's filter names: the `definition`
 * column from migration 25 (written when the row is inserted; an index on
 * the metadata made every barrier write every index: `hot-barriers.ts`,
 * docs/decisions/0108). */
export const definitionExpression = "definition";

/** The expression migration 22 indexed (the planner used the index only for the same text). */
const definitionInMetadata = "(metadata::jsonb #>> '{config,definition}')";

/** Migration 22: executions by definition (on the metadata; moved onto its own column by migration 25). */
export async function createDefinitionIndex(client: pg.ClientBase): Promise<void> {
  await client.query(`CREATE INDEX executions_by_definition ON executions (${definitionInMetadata}, created_at, execution_id)`);
}
