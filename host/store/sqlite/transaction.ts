// Transaction control for the store operations: one operation in one
// transaction, or a group commit of several operations in one transaction:
// first without savepoints, and when one of them throws, rolled back and
// run again with a SAVEPOINT each. A body that throws then rolls back to
// its savepoint and fails only its own settlement; its group-mates still
// commit. If the transaction itself fails (BEGIN, COMMIT, or a rollback
// that SQLite already performed), every operation of the group fails with
// that error.
//
// BEGIN, COMMIT, SAVEPOINT and RELEASE run as cached prepared statements:
// `exec` parses its text again each time, and every run commits six
// transactions (issue 25). ROLLBACK, on failures only, stays an `exec`.
//
// Errors leave here as Phronomy errors: a raw SQLite error becomes a
// `StoreError` carrying SQLite's message, its code and the store's path.

import { PhronomyError, StoreError } from "../../errors.js";
import type { OffloadOperation } from "../offload-operation.js";
import type { SqliteConnection } from "./driver.js";
import { applyOperation } from "./operations.js";
import { rollbackQuietly } from "./rollback.js";

export type Settlement = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: PhronomyError };

/** Commits `operations` in one transaction; one settlement per operation,
 * in order. Never throws. */
export function commitGroup(connection: SqliteConnection, operations: readonly OffloadOperation[]): Settlement[] {
  if (operations.length === 1) return [commitAlone(connection, operations[0]!)];
  return (
    inGroupTransaction(connection, operations, () => applyTogether(connection, operations))
    ?? inGroupTransaction(connection, operations, () => operations.map((operation) => applyInSavepoint(connection, operation)))
  );
}

/** BEGIN, the group's bodies, COMMIT. A failed BEGIN or COMMIT fails every
 * operation of the group with that error; `undefined` from `apply` (it
 * rolled back already) is handed back to the caller. */
function inGroupTransaction<Applied extends Settlement[] | undefined>(
  connection: SqliteConnection,
  operations: readonly OffloadOperation[],
  apply: () => Applied,
): Settlement[] | Applied {
  try {
    connection.prepare("BEGIN IMMEDIATE").run();
  } catch (error) {
    return failedTogether(connection, operations, error);
  }
  const settlements = apply();
  if (settlements === undefined) return settlements;
  try {
    // A failed COMMIT fails the group whichever way it ran: only an
    // operation's own failure runs the group again.
    connection.prepare("COMMIT").run();
    return settlements;
  } catch (error) {
    rollbackQuietly(connection);
    return failedTogether(connection, operations, error);
  }
}

function failedTogether(connection: SqliteConnection, operations: readonly OffloadOperation[], error: unknown): Settlement[] {
  const failure = storeErrorOf(error, connection.path);
  return operations.map(() => ({ ok: false, error: failure }));
}

/** The common case of a group, every operation succeeding, without a
 * savepoint each (docs/decisions/0103: two statements per operation, and
 * SQLite's copy of every page first written under one). When one fails,
 * the whole transaction is rolled back and `undefined` tells the caller to
 * run the group again with a SAVEPOINT per operation, where it fails
 * alone: an operation's body depends only on the file and the operation,
 * so the second run settles as the first would have with savepoints. */
function applyTogether(connection: SqliteConnection, operations: readonly OffloadOperation[]): Settlement[] | undefined {
  const settlements: Settlement[] = [];
  for (const operation of operations) {
    try {
      settlements.push({ ok: true, value: applyOperation(connection, operation) });
    } catch {
      rollbackQuietly(connection);
      return undefined;
    }
  }
  return settlements;
}

/** A lone operation needs no savepoint: if it fails, its transaction is
 * rolled back whole. */
function commitAlone(connection: SqliteConnection, operation: OffloadOperation): Settlement {
  try {
    connection.prepare("BEGIN IMMEDIATE").run();
    const value = applyOperation(connection, operation);
    connection.prepare("COMMIT").run();
    return { ok: true, value };
  } catch (error) {
    rollbackQuietly(connection);
    return { ok: false, error: storeErrorOf(error, connection.path) };
  }
}

function applyInSavepoint(connection: SqliteConnection, operation: OffloadOperation): Settlement {
  connection.prepare("SAVEPOINT operation").run();
  try {
    const value = applyOperation(connection, operation);
    connection.prepare("RELEASE operation").run();
    return { ok: true, value };
  } catch (error) {
    // If SQLite already rolled the whole transaction back (disk full, I/O
    // error), ROLLBACK TO fails and so will the COMMIT: every operation of
    // the group then fails together in commitGroup.
    try {
      connection.exec("ROLLBACK TO operation");
      connection.exec("RELEASE operation");
    } catch {
      // reported by COMMIT
    }
    return { ok: false, error: storeErrorOf(error, connection.path) };
  }
}

/** A Phronomy error as is; anything else (a SQLite error) as a `StoreError`
 * naming the store and carrying SQLite's code. */
export function storeErrorOf(error: unknown, path: string): PhronomyError {
  if (error instanceof PhronomyError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const sqliteCode = (error as { code?: unknown } | null)?.code;
  return new StoreError(`the store at ${path} failed: ${message}`, {
    cause: error,
    details: typeof sqliteCode === "string" ? { sqliteCode } : undefined,
  });
}
