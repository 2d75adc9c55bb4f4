// The real PostgreSQL the tests run against (127.0.0.1:5432, database
// `test`, or PHRONOMY_TEST_POSTGRES_URL), and a fresh schema per test,
// dropped afterwards. There is no skip: CI starts PostgreSQL (.ci/run), so
// an unreachable database fails the tests loudly with the URL and the reason.
//
// What a test opened on its schemas is closed after the test; the schemas
// are dropped after the file, one by one on one connection: a connection
// per schema took two to four times as long (8 schemas: 1.2-1.6 s with a
// connection each, 0.3-0.5 s on one, on the loaded 2 cores). Each drop is a
// transaction of its own, so that the locks of one schema's tables are all
// one transaction holds (all in one would lock every table of the file's
// schemas at once, against max_locks_per_transaction).

import { randomBytes } from "node:crypto";
import pg from "pg";
import { cleanUpAfterEachFile, cleanUpAfterEachTest } from "../support/cleanups.js";

export const postgresUrl = process.env["PHRONOMY_TEST_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";

const schemas: string[] = [];
const cleanups: (() => Promise<unknown>)[] = [];
/** Schemas of the file's finished tests, dropped after the file. */
const schemasToDrop: string[] = [];

/** PHRONOMY_TEST_KEEP_SCHEMAS=1 keeps each test's schema for a look after
 * the run (a failure's state); drop them by hand afterwards. */
const keepSchemas = process.env["PHRONOMY_TEST_KEEP_SCHEMAS"] === "1";

cleanUpAfterEachTest(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  schemasToDrop.push(...schemas.splice(0));
});

cleanUpAfterEachFile(async () => {
  const names = schemasToDrop.splice(0);
  if (keepSchemas && names.length > 0) console.log(`kept schemas: ${names.join(", ")}`);
  else if (names.length > 0) {
    await withClient(async (client) => {
      for (const name of names) await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    });
  }
});

/** Runs `body` on a connection of its own (not the store's pool). */
export async function withClient<T>(body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is unreachable at ${postgresUrl} (${error instanceof Error ? error.message : String(error)}); start it (.ci/run does: pg_ctlcluster … main start) or set PHRONOMY_TEST_POSTGRES_URL`,
    );
  }
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

/** A new schema name for this test, dropped (CASCADE) after its file. */
export function freshSchema(): string {
  const name = `phronomy_test_${process.pid}_${randomBytes(5).toString("hex")}`;
  schemas.push(name);
  return name;
}

/** The URL of a fresh schema. */
export function freshSchemaUrl(): string {
  return `${postgresUrl}?schema=${freshSchema()}`;
}

/** Runs `cleanup` after the test, before the schemas are dropped. */
export function atEnd(cleanup: () => Promise<unknown>): void {
  cleanups.push(cleanup);
}

/** The pid of the backend waiting on a lock `blocker` holds. Found by
 * `pg_blocking_pids`, never by query text: test files run side by side on
 * one database, and a query-text match once terminated another file's
 * backend (landing CI of cf7afd26). */
export async function backendBlockedBy(blocker: pg.ClientBase): Promise<number> {
  const { rows } = await blocker.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  const blockerPid = rows[0]!.pid;
  const end = Date.now() + 30_000;
  for (;;) {
    const found = await withClient((client) =>
      client.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [blockerPid]),
    );
    const pid = found.rows[0]?.pid;
    if (pid !== undefined) return pid;
    if (Date.now() > end) throw new Error(`no backend waited on a lock of backend ${blockerPid} within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
