// An execution's status checked where it is written, not on every update
// (docs/decisions/0117, migration 27).
//
// Migration 1 declared `executions.status` with a table CHECK constraint.
// PostgreSQL checks a table's CHECK constraints on every update of a row,
// whatever columns it sets, and rebuilds their expressions from the
// catalog text for every statement that writes the table (`ExecConstraints`
// → `stringToNode`): every barrier (four per run) paid for a check of a
// status it does not write. Measured: a barrier call 39 → 35 µs of the
// server's CPU without it.
//
// From migration 27 the column's type is the domain `execution_status`
// (text, one of the four statuses). A domain's constraint is checked where
// a value is assigned to the column (an insert, an update whose SET list
// names `status`), from the backend's type cache, not rebuilt per
// statement; an update that leaves `status` out (a barrier) checks
// nothing, and has nothing to check. The values allowed are the same, so
// a process of the version before writes and reads the same rows (the
// column reads back as text).
//
// The domain is created without its constraint, the column's type changed
// (a domain over text: no rewrite of the rows), then the constraint added,
// which checks the rows already stored.

import type pg from "pg";

/** Migration 27, its first part: the status column a domain, the table CHECK dropped. */
export async function statusAsDomain(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE DOMAIN execution_status AS text;
    ALTER TABLE executions DROP CONSTRAINT executions_status_check;
    ALTER TABLE executions ALTER COLUMN status TYPE execution_status;
    ALTER DOMAIN execution_status ADD CONSTRAINT execution_status_known
      CHECK (VALUE IN ('preparing', 'active', 'suspended', 'terminal'));
  `);
}
