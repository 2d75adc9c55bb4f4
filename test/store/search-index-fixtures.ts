// A store file's search index as versions before 15 kept it: by triggers
// in the writing transaction (docs/decisions/0082), without the mark and
// the list of the deferred index (docs/decisions/0095). For tests that roll
// a file back to an older version and let the store migrate it again.

import { searchIndexedCharsMax } from "../../host/store/execution-pages.js";
import { rawExec } from "./fixtures.js";

const indexed = (column: string) => `substr(nullif(${column}, 'null'), 1, ${searchIndexedCharsMax})`;

/** SQL that takes a store back from version 15 to the search index its
 * triggers kept (versions 9–14). */
export const beforeVersion15 = `DROP TRIGGER execution_search_update; DROP TRIGGER execution_search_delete;
  DROP TABLE execution_search_mark; DROP TABLE execution_search_pending;
  CREATE TRIGGER execution_search_insert AFTER INSERT ON executions BEGIN
    INSERT INTO execution_search (rowid, input, output) VALUES (new.rowid, ${indexed("new.input")}, ${indexed("new.output")});
  END;
  CREATE TRIGGER execution_search_update AFTER UPDATE OF input, output ON executions
  WHEN old.input IS NOT new.input OR old.output IS NOT new.output BEGIN
    DELETE FROM execution_search WHERE rowid = old.rowid;
    INSERT INTO execution_search (rowid, input, output) VALUES (new.rowid, ${indexed("new.input")}, ${indexed("new.output")});
  END;
  CREATE TRIGGER execution_search_delete AFTER DELETE ON executions BEGIN
    DELETE FROM execution_search WHERE rowid = old.rowid;
  END;`;

export function searchIndexByTriggers(path: string): void {
  rawExec(path, beforeVersion15);
}
