// The inbox by conversation (migration 30, docs/decisions/0128).
//
// `conversation_has_rows` (homes-rows.ts) asks whether a conversation has an
// inbox row of any state. The inbox's only index by conversation covered
// unsettled rows (`approval_inbox_unsettled`), so for a conversation with
// none — every new conversation a start moves, every home the prune looks
// at — PostgreSQL read the whole table to prove it: settled rows stay until
// the executions' prune takes them, so a busy deployment's inbox grew, and
// each move with it. An index of every row by `agent_id` answers with one
// probe; an inbox row is written once per decision or filed start, so the
// index costs one entry a filing.

import type pg from "pg";

/** Migration 30: every inbox row indexed by its conversation. */
export async function indexInboxByAgent(client: pg.ClientBase): Promise<void> {
  await client.query("CREATE INDEX IF NOT EXISTS approval_inbox_by_agent ON approval_inbox (agent_id)");
}
