// `finished_at` written by the writes that finish a row, not generated
// (docs/decisions/0117, migration 27).
//
// Migration 25 (`hot-barriers.ts`, decision 0108) made `finished_at` a
// stored generated column: `updated_at` while the row is terminal, NULL
// otherwise. PostgreSQL 15 rebuilds a generated column's expression from
// its catalog text for every statement that writes the table
// (`ExecInitStoredGenerated`: parse, plan, compile), whether or not the
// statement touches the column — every barrier (four per run), every
// preparation, every terminal commit. Measured: a barrier call 43.5 →
// 39.3 µs of the server's CPU without it.
//
// From migration 27 the column is plain, with the same value kept by:
//
// * the terminal commit (`terminal_commit`, `functions.ts`), which sets it
//   with the status: `p_at` when the status is terminal, NULL otherwise;
// * an insert (a preparation, a refused queued message inserted terminal:
//   `queue.ts`): the insert trigger that already computes the search
//   document sets it;
// * any other update that sets `status` (the approval commit, the
//   operations of `operations.ts`, the reopen of `reopen.ts`, and the
//   writes of a process of the version before): the trigger
//   `execution_finished`, `BEFORE UPDATE OF status`, whose `WHEN` calls it
//   only when the column disagrees with the rule — never for the terminal
//   commit, which wrote it. A barrier does not name `status`, so neither
//   the trigger nor its `WHEN` costs it anything.
//
// No update of a terminal row leaves `status` out of its SET list (the
// reopen, the only write that reads a terminal row, sets it), so the
// column is what the generated one was for every write the store makes.
// `ALTER COLUMN … DROP EXPRESSION` keeps the stored values and does not
// rewrite the table.

import type pg from "pg";
import { terminalCommitWritesFinishedAt } from "./functions.js";
import { documentOf } from "./pages.js";

/** `finished_at` as the row's status and `updated_at` make it, as SQL over `row` (`NEW.`). */
const finishedAtOf = (row: string) => `(CASE WHEN ${row}status = 'terminal' THEN ${row}updated_at END)`;

/** The name a row's metadata carries, as in `hot-barriers.ts`. */
const definitionIn = (row: string) => `(${row}metadata::jsonb #>> '{config,definition}')`;

/** Migration 27, first: `finished_at` a plain column, its values kept (before
 * the status column's type changes: a generated column's input cannot). */
export async function finishedAtPlain(client: pg.ClientBase): Promise<void> {
  await client.query("ALTER TABLE executions ALTER COLUMN finished_at DROP EXPRESSION");
}

/** Migration 27, last: `finished_at` written by the terminal commit, the
 * insert trigger and a guard on status changes (after the status column's
 * type changes: a trigger's WHEN naming a column fixes its type). */
export async function writeFinishedAt(client: pg.ClientBase): Promise<void> {
  await client.query(`
    -- The search document (migration 18) and, on insert, the definition's name (25) and the finish time.
    CREATE OR REPLACE FUNCTION execution_search_document() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.search := ${documentOf("NEW.")};
      IF TG_OP = 'INSERT' THEN
        NEW.definition := ${definitionIn("NEW.")};
        NEW.finished_at := ${finishedAtOf("NEW.")};
      END IF;
      RETURN NEW;
    END $$;

    CREATE FUNCTION execution_finished() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.finished_at := ${finishedAtOf("NEW.")};
      RETURN NEW;
    END $$;
    CREATE TRIGGER execution_finished BEFORE UPDATE OF status ON executions
    FOR EACH ROW WHEN (NEW.finished_at IS DISTINCT FROM ${finishedAtOf("NEW.")})
    EXECUTE FUNCTION execution_finished();
  `);
  await terminalCommitWritesFinishedAt(client);
}
