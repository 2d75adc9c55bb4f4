// A barrier rewrites its execution row in place (docs/decisions/0108).
// PostgreSQL updates a row without touching any index (a HOT update) only
// when no column any index names changes — an index's expression and its
// WHERE clause included, whatever the row's status. Two indexes named
// columns every barrier writes: the prune's `executions_finished` (on
// `updated_at`, partial to terminal rows: migration 5) and the pages'
// `executions_by_definition` (on an expression over `metadata`: migration
// 22). So every barrier (four per run) wrote a new entry into each of the
// executions table's 13 indexes, the GIN one included, though its row
// moved nowhere. From migration 25 they index columns of their own:
//
// * `finished_at`: a stored generated column, `updated_at` while the row
//   is terminal and NULL otherwise; a barrier (an active row) leaves it
//   NULL. The prune reads `finished_at` (`prune.ts`). From migration 27
//   a plain column its writers keep, not generated (`finished-at.ts`,
//   decision 0117).
// * `definition`: the name in `metadata.config.definition`, written when
//   the row is inserted by the trigger that already computes the search
//   document (the name never changes: a start's settings are fixed at its
//   preparation; the SQLite store keeps it the same way, 0094). The pages
//   filter on it (`page-definitions.ts`).
//
// And `executions_by_creation` (`created_at` alone, migration 1) goes, as
// it went from the SQLite store (decision 0091): every read ordered or
// bounded by `created_at` is served by `executions_by_time` (`created_at,
// execution_id`), whose first column it is, and each write not in place
// (the preparation, the terminal commit, a barrier that found its page
// full) wrote an entry into it.
//
// Rule kept here: no index of `executions` names `metadata`, `usage`,
// `phase`, `revision`, `last_seq` or `updated_at` — the columns a barrier
// writes (`functions.ts`). A new index on one of them makes every barrier
// write every index again.

import type pg from "pg";
import { documentOf } from "./pages.js";

/** The name a row's metadata carries (`metadata.config.definition`), as SQL over `row`. */
const definitionIn = (row: string) => `(${row}metadata::jsonb #>> '{config,definition}')`;

/** Migration 25, its second part: the two indexes moved onto columns no
 * barrier writes; the index on `created_at` alone dropped. */
export async function indexColumnsBarriersKeep(client: pg.ClientBase): Promise<void> {
  await client.query(`
    ALTER TABLE executions ADD COLUMN finished_at bigint GENERATED ALWAYS AS (CASE WHEN status = 'terminal' THEN updated_at END) STORED;
    DROP INDEX executions_finished;
    CREATE INDEX executions_finished ON executions (finished_at) WHERE finished_at IS NOT NULL;

    ALTER TABLE executions ADD COLUMN definition text;
    UPDATE executions SET definition = ${definitionIn("")} WHERE ${definitionIn("")} IS NOT NULL;
    DROP INDEX executions_by_definition;
    CREATE INDEX executions_by_definition ON executions (definition, created_at, execution_id);

    DROP INDEX executions_by_creation;

    -- The search document (migration 18, \`pages.ts\`) and, on insert, the definition's name.
    CREATE OR REPLACE FUNCTION execution_search_document() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.search := ${documentOf("NEW.")};
      IF TG_OP = 'INSERT' THEN
        NEW.definition := ${definitionIn("NEW.")};
      END IF;
      RETURN NEW;
    END $$;
  `);
}

/** The share of each new page of `executions` an insert may fill (migration
 * 29, docs/decisions/0120): the rest is room for the new versions of the
 * rows' four barriers. At migration 3's 70, 100 runs in flight found the
 * page full in ≈ one barrier a run (a new entry in each of the 8 indexes
 * holding a running row, and the bottom-up deletions those entries later
 * cost); at 50, ≈ 0.3. Pages written before keep their fill. Once vacuum
 * has reclaimed old versions a page is refilled only to this share, so a
 * table of finished rows holds up to ≈ 1.4× the pages it would at 70. */
export const executionsFillfactor = 50;

/** Migration 29: more room for barriers on the pages inserts fill from now on. */
export async function roomForBarriers(client: pg.ClientBase): Promise<void> {
  await fillExecutionsTo(client, executionsFillfactor);
}

/** The share of each new page of `executions` inserts fill from now on;
 * pages written before keep theirs (nothing is rewritten). */
async function fillExecutionsTo(client: pg.ClientBase, fillfactor: number): Promise<void> {
  await client.query(`ALTER TABLE executions SET (fillfactor = ${fillfactor})`);
}

/** The share from migration 31 (docs/decisions/0143). At 50, 100 runs in
 * flight still found the page full in 0.3–0.45 barriers a run (rows of ≈
 * 500 bytes, ≈ 8 to a page, each written five times while it runs); at 40,
 * ≈ 0.2; at 30, ≈ 0.04: the terminal commit (which changes `status`, an
 * indexed column) is then the only update a run not made in place. The
 * price: a table of finished rows holds up to ≈ 1.7× the pages it would at
 * 50 (≈ 5 rows a page where vacuum has reclaimed the old versions). */
export const executionsFillfactorRoomier = 30;

/** Migration 31: room for every barrier of the rows a page holds. */
export async function roomForEveryBarrier(client: pg.ClientBase): Promise<void> {
  await fillExecutionsTo(client, executionsFillfactorRoomier);
}
