// Rolling back after a failure. SQLite may already have rolled the
// transaction back itself (a full disk, an I/O error), and a second
// ROLLBACK would then throw "no transaction is active" in place of the
// store's own error, which the caller is about to report.

import type { SqliteConnection } from "./driver.js";

/** Rolls back whatever transaction is still open; none open is no error. */
export function rollbackQuietly(connection: SqliteConnection): void {
  try {
    connection.exec("ROLLBACK");
  } catch {
    // No transaction was open any more: nothing to undo.
  }
}
