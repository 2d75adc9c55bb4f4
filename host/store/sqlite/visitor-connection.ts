// A visitor's two connections to a SQLite store (SPEC §4.3,
// docs/decisions/0015-sqlite-visitors.md): a read-only one for every read,
// and — opened only when the visitor files its first decision — a writable
// one used for nothing but the approval inbox insert (`inbox.ts`).
//
// Rules kept here:
// * A visitor never creates, migrates or re-configures a store: the file
//   must exist, be a Phronomy store, and be at exactly this version's
//   schema. An older schema is refused (its owner migrates it when it opens
//   it with this version); a newer one too (upgrade Phronomy).
// * The inbox connection sets only per-connection pragmas (busy timeout,
//   `synchronous = FULL`: a filed decision survives power loss); the
//   journal mode is the file's, set by its owner. One SQLite opened
//   read-only is not kept (`writable.ts`).

import { StoreError } from "../../errors.js";
import { openSqlite, type SqliteConnection } from "./driver.js";
import { applicationId, busyTimeoutMs, checkFileHeader, messageOf, readFileState, schemaVersion } from "./schema.js";
import { openedFor } from "./writable.js";

/** Opens `path` read-only after checking it is a store this version reads. */
export function openVisitorConnection(path: string): SqliteConnection {
  checkFileHeader(path);
  let connection: SqliteConnection;
  try {
    connection = openSqlite(path, { readonly: true });
  } catch (error) {
    const missing = (error as { code?: unknown }).code === "SQLITE_CANTOPEN";
    throw new StoreError(
      missing
        ? `no store at ${path} to visit: a visitor never creates a store — open it as its owner (Phronomy.open, \`phronomy run\`) first`
        : `cannot open the store at ${path} as a visitor: ${messageOf(error)}`,
      { cause: error },
    );
  }
  try {
    connection.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    checkVisitable(path, connection);
    return connection;
  } catch (error) {
    connection.close();
    if (error instanceof StoreError) throw error;
    throw new StoreError(`cannot open the store at ${path} as a visitor: ${messageOf(error)}`, { cause: error });
  }
}

function checkVisitable(path: string, connection: SqliteConnection): void {
  const state = readFileState(connection);
  if (state.applicationId !== applicationId) {
    const what = state.schemaObjects === 0 ? "an empty SQLite database" : `a SQLite database of another application (application_id ${state.applicationId})`;
    throw new StoreError(`${path} is ${what}, not a Phronomy store; a visitor never creates or changes a store: point it at a store its owner created`, {
      details: { reason: "not_a_store", storePath: path },
    });
  }
  if (state.userVersion > schemaVersion) {
    throw new StoreError(
      `${path} was written by a newer Phronomy (store schema version ${state.userVersion}; this version reads ${schemaVersion}); upgrade Phronomy to visit it`,
      { details: { reason: "schema_newer", storePath: path } },
    );
  }
  if (state.userVersion < schemaVersion) {
    throw new StoreError(
      `${path} has store schema version ${state.userVersion}, older than this Phronomy's ${schemaVersion}, and a visitor never migrates a store: its owner must migrate it — open it as its owner with this version (when no process owns it), then visit it`,
      { details: { reason: "schema_older", storePath: path } },
    );
  }
}

/** The visitor's writable connection for the approval inbox only. */
export function openInboxConnection(path: string): SqliteConnection {
  let connection: SqliteConnection;
  try {
    connection = openSqlite(path, { mustExist: true });
  } catch (error) {
    throw new StoreError(`cannot open the approval inbox of the store at ${path}: ${messageOf(error)}`, { cause: error });
  }
  try {
    connection.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    connection.exec("PRAGMA synchronous = FULL");
  } catch (error) {
    connection.close();
    throw new StoreError(`cannot open the approval inbox of the store at ${path}: ${messageOf(error)}`, { cause: error });
  }
  // Opened while the file refused writes, it would refuse every filing for
  // good (docs/decisions/0090): not kept, so the next filing opens again.
  if (openedFor(connection) === "reading_only") {
    connection.close();
    throw new StoreError(
      `cannot file into the approval inbox of the store at ${path}: SQLite could open its file for reading only (the file or its file system refuses writes); send it again once the store is writable`,
      { details: { reason: "store_read_only", storePath: path } },
    );
  }
  return connection;
}
