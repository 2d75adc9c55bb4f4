// The index of executions by definition on PostgreSQL (docs/decisions/0089):
// a partial expression index on the name a named definition's executions
// carry (`metadata.config.definition`), in keyset order, so a page of one
// definition's conversations is read like a page of one agent's.

import type pg from "pg";

/** The expression the index holds and the page's filter names (the planner uses the index only for the same text). */
export const definitionExpression = "(metadata::jsonb #>> '{config,definition}')";

/** Migration 21: executions by definition. */
export async function createDefinitionIndex(client: pg.ClientBase): Promise<void> {
  await client.query(
    `CREATE INDEX executions_by_definition ON executions (${definitionExpression}, created_at, execution_id) WHERE ${definitionExpression} IS NOT NULL`,
  );
}
