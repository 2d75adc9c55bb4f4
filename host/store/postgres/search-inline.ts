// The run's two writes that insert or finish a row compute what the row
// triggers computed for them (docs/decisions/0120, migration 29).
//
// Migration 18 (`pages.ts`) keeps the search document by two BEFORE row
// triggers calling the PL/pgSQL function `execution_search_document`: on
// insert (with, from migrations 25 and 27, the definition's name and
// `finished_at`) and on an update that changes the input or the output.
// Each call is a PL/pgSQL trigger invocation on top of the work itself; a
// run paid two (its preparation's insert, its terminal commit's update).
//
// From migration 29:
//
// * the reporting preparation (`prepare_execution_reporting_first`) inserts
//   the row with `search`, `definition` and `finished_at` written, and the
//   terminal commit (`terminal_commit`) sets `search` in its UPDATE, from
//   the same expressions the trigger function evaluates (`documentOfText`
//   here and in `pages.ts`);
// * the insert trigger runs only `WHEN (NEW.search IS NULL)`: an insert
//   that wrote no document — the queue's refused message (`queue.ts`), the
//   `prepare_execution` overloads a process of an earlier version calls —
//   still gets all three from it. A document is never NULL (the input is
//   NOT NULL, and `to_tsvector` of text is a tsvector), so a row the
//   trigger skipped was written by a writer that set all three;
// * the update trigger runs only when the input or the output changed AND
//   the statement left `search` as it was (`NEW.search IS NOT DISTINCT FROM
//   OLD.search`): every other writer of the input or the output (the
//   approval commit, the operations, the reopen, an earlier version's
//   writes) leaves it, and the trigger recomputes it as before; a writer
//   that set it to a document equal to the old one is recomputed to the
//   same value. So `search` is the document of the row's input and output
//   after every write, as migration 18 keeps it.
//
// The function bodies are replaced (`CREATE OR REPLACE`, same signatures,
// same answers), so a process of version 28 beside a migrated schema calls
// the new bodies and reads what it read before.

import type pg from "pg";
import { documentOfText } from "./pages.js";

/** The name a row's metadata carries, as the insert trigger reads it (`hot-barriers.ts`). */
const definitionOfMetadata = (metadata: string) => `(${metadata}::jsonb #>> '{config,definition}')`;

/** Columns and values the reporting preparation's INSERT adds: the row is
 * inserted with output `'null'` and the status `p_status` at `p_at`. */
export const insertedDocuments = {
  columns: "search, definition, finished_at",
  values: `${documentOfText("p_input", "'null'")}, ${definitionOfMetadata("p_metadata")}, CASE WHEN p_status = 'terminal' THEN p_at END`,
} as const;

/** The terminal commit's new document: the row's input (unchanged) and the
 * output it writes (the SET list reads the row as it was). */
export const terminalDocument = documentOfText("executions.input", "p_output");

/** Migration 29, the triggers: run only for writes that did not compute
 * the document themselves. */
export async function searchTriggersSkipWritten(client: pg.ClientBase): Promise<void> {
  await client.query(`
    DROP TRIGGER IF EXISTS execution_search_insert ON executions;
    CREATE TRIGGER execution_search_insert BEFORE INSERT ON executions
    FOR EACH ROW WHEN (NEW.search IS NULL) EXECUTE FUNCTION execution_search_document();
    DROP TRIGGER IF EXISTS execution_search_update ON executions;
    CREATE TRIGGER execution_search_update BEFORE UPDATE OF input, output ON executions
    FOR EACH ROW WHEN ((OLD.input IS DISTINCT FROM NEW.input OR OLD.output IS DISTINCT FROM NEW.output) AND NEW.search IS NOT DISTINCT FROM OLD.search)
    EXECUTE FUNCTION execution_search_document();
  `);
}
