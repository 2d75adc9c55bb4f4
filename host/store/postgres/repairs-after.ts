// The search document and the finish time kept by AFTER row triggers that
// repair a row, not BEFORE triggers that compute it (docs/decisions/0124,
// migration 30).
//
// Migrations 27 and 29 left two BEFORE UPDATE row triggers on `executions`:
// `execution_finished` (OF status, `finished-at.ts`) and
// `execution_search_update` (OF input, output, `search-inline.ts`), each
// behind a `WHEN` that every write of this version makes false (the
// terminal commit writes both columns itself). But PostgreSQL, for a table
// with any BEFORE UPDATE row trigger, fetches and locks the old row
// (`ExecBRUpdateTriggers` → `GetTupleForTrigger` → `heap_lock_tuple`, a
// WAL record of its own) on every UPDATE, before it looks at a trigger's
// column list or its `WHEN`: the four barriers of a run, which name
// neither list, paid it too (decision 0120, "what is left").
//
// An AFTER row trigger costs an UPDATE that fires none of them only a read
// of the old row and a look at each trigger's column list
// (`ExecARUpdateTriggers`); its `WHEN` is evaluated only for the writes
// that name its columns, and the repair runs only when the `WHEN` holds —
// for the writers that leave the columns as they were: an earlier version's
// process, the operations, the reopen, a hand-written UPDATE. The repair
// is a second UPDATE of the row in the same statement (a new row version),
// paid only by those writes, and seen by every later statement as the
// BEFORE trigger's value was. (A `RETURNING` of the first UPDATE would see
// the columns before the repair: no statement of the store returns either.)
// The repair names the table in the trigger's own schema (`TG_TABLE_SCHEMA`),
// not through the writer's `search_path`, which may not hold it.
//
// The insert trigger (`execution_search_insert`, BEFORE INSERT) stays: an
// insert has no old row to lock.

import type pg from "pg";
import { documentOf } from "./pages.js";

/** `finished_at` as the row's status and `updated_at` make it (`finished-at.ts`), as SQL over `row`. */
const finishedAtOf = (row: string) => `(CASE WHEN ${row}status = 'terminal' THEN ${row}updated_at END)`;

/** Migration 30: the two BEFORE UPDATE triggers replaced by AFTER ones
 * that repair the row. May run again (a rewound schema's tests). */
export async function repairRowsAfter(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE OR REPLACE FUNCTION execution_finished_repair() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      EXECUTE format('UPDATE %I.executions SET finished_at = $1 WHERE execution_id = $2', TG_TABLE_SCHEMA) USING ${finishedAtOf("NEW.")}, NEW.execution_id;
      RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION execution_search_repair() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      EXECUTE format('UPDATE %I.executions SET search = $1 WHERE execution_id = $2', TG_TABLE_SCHEMA) USING ${documentOf("NEW.")}, NEW.execution_id;
      RETURN NULL;
    END $$;

    DROP TRIGGER IF EXISTS execution_finished ON executions;
    CREATE TRIGGER execution_finished AFTER UPDATE OF status ON executions
    FOR EACH ROW WHEN (NEW.finished_at IS DISTINCT FROM ${finishedAtOf("NEW.")})
    EXECUTE FUNCTION execution_finished_repair();

    DROP TRIGGER IF EXISTS execution_search_update ON executions;
    CREATE TRIGGER execution_search_update AFTER UPDATE OF input, output ON executions
    FOR EACH ROW WHEN ((OLD.input IS DISTINCT FROM NEW.input OR OLD.output IS DISTINCT FROM NEW.output) AND NEW.search IS NOT DISTINCT FROM OLD.search)
    EXECUTE FUNCTION execution_search_repair();
  `);
}
