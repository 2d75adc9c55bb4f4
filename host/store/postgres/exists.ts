// Whether a PostgreSQL schema already holds a Phronomy store (its
// `store_version` table), without creating or migrating anything: a read
// command (the CLI's `ls`, the dashboard) must not create an empty store by
// accident. Exposed as `PostgresStore.exists(url)`; `pg` is loaded here only.

import { StoreError } from "../../errors.js";
import { parseLocation } from "./connection.js";

/** What `PostgresStore.exists` found. */
export interface PostgresStoreProbe {
  /** The schema the URL names (`?schema=`, default as the store's). */
  readonly schema: string;
  /** Whether that schema holds a Phronomy store. */
  readonly found: boolean;
}

/** `displayUrl`: the URL as it may appear in a message (no password). */
export async function postgresStoreExists(url: string, displayUrl: string): Promise<PostgresStoreProbe> {
  const { default: pg } = await import("pg");
  const parsed = new URL(url);
  parsed.searchParams.delete("lease_ms"); // the store's parameter, not the server's
  const { connectionString, schema } = parseLocation(parsed.toString(), undefined);
  const client = new pg.Client({ connectionString });
  try {
    await client.connect();
    const found = (await client.query<{ found: string | null }>("SELECT to_regclass($1) AS found", [`${schema}.store_version`])).rows[0]?.found != null;
    return { schema, found };
  } catch (error) {
    throw new StoreError(`cannot reach the PostgreSQL store at ${displayUrl}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    await client.end().catch(() => undefined);
  }
}
