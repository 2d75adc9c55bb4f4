// Where a PostgreSQL store lives and how it connects: the URL (with the
// store's own `?schema=` parameter taken out before `pg` sees it), the
// PostgreSQL schema name the store's tables live in, and the pool.
//
// Rules kept here:
// * The schema name is checked against a strict pattern (lower case, so
//   quoting never changes its meaning), and written into SQL only quoted
//   (`quotedIdentifier`): a reserved word (`select`) is a valid schema name.
//   What PostgreSQL would refuse or share with others is refused here with
//   `InvalidInputError` naming the reason (docs/decisions/0019): an empty
//   name, one longer than 63 bytes, one with a quote, `pg_…` and
//   `information_schema` (the system's), and `public` (everyone's).
// * The pool has a bounded, named size; every connection's search_path is
//   the store's schema only (pg_catalog is always searched), so statements
//   name tables without a schema and can never touch another schema.
// * `bigint` columns (revisions, millisecond times) come back as numbers:
//   they are far below 2^53.
// * A password in the URL never appears in a message (`redactedUrl`).

import pg from "pg";
import { InvalidInputError } from "../../errors.js";
import { quotedIdentifier } from "./literals.js";

/** The schema when neither the URL nor the options name one. */
export const schemaNameDefault = "phronomy";

/** Connections a store opens at most. Each is a PostgreSQL backend process
 * (≈ 10 MB of server memory) and the server's `max_connections` is shared
 * by every process of the application; ten lets ten transactions commit
 * at once, which with PostgreSQL's own group commit of WAL flushes already
 * saturates a loopback server (measured by bench/e2e --store postgres://…). */
export const poolSizeDefault = 10;

/** Upper bound for `poolSize`: well under PostgreSQL's default
 * `max_connections` (100), which several coordinator processes share. */
export const poolSizeMax = 64;

/** How long `pool.connect()` waits for a free connection or the server
 * before failing with `StoreError`: longer than any healthy transaction,
 * short enough that an unreachable database surfaces as an error. */
export const connectTimeoutMs = 10_000;

const schemaNamePattern = /^[a-z_][a-z0-9_]*$/;

/** PostgreSQL's identifier length (NAMEDATALEN - 1): a longer name would be
 * truncated silently, and two stores could meet in one schema. */
export const schemaNameBytesMax = 63;

/** Refuses a schema name the store cannot use, naming why. */
export function checkSchemaName(schema: unknown): string {
  const why =
    typeof schema !== "string"
      ? "it must be a string"
      : schema.length === 0
        ? "it is empty"
        : Buffer.byteLength(schema, "utf8") > schemaNameBytesMax
          ? `it is longer than ${schemaNameBytesMax} bytes (PostgreSQL would truncate it)`
          : schema.includes('"')
            ? "it holds a double quote"
            : !schemaNamePattern.test(schema)
              ? `it must match ${String(schemaNamePattern)} (lower case letters, digits and underscores, not starting with a digit)`
              : schema === "public"
                ? "public is every application's default schema; the store needs a schema of its own (the default is phronomy)"
                : schema.startsWith("pg_") || schema === "information_schema"
                  ? "names starting with pg_, and information_schema, belong to PostgreSQL"
                  : undefined;
  if (why !== undefined) throw new InvalidInputError(`the PostgreSQL schema name ${JSON.stringify(schema)} cannot be used: ${why}`, { details: { schema } });
  return schema as string;
}

export interface PostgresLocation {
  /** The URL handed to `pg`, without `schema`. */
  readonly connectionString: string;
  readonly schema: string;
  /** For messages: the URL without a password. */
  readonly redactedUrl: string;
}

export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** Splits `postgres://…?schema=name` into what `pg` needs and the schema. */
export function parseLocation(url: string, schemaOption: string | undefined): PostgresLocation {
  if (typeof url !== "string" || !isPostgresUrl(url)) {
    throw new InvalidInputError(`the PostgreSQL store needs a postgres:// or postgresql:// URL, got ${JSON.stringify(url)}`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError(`cannot parse the PostgreSQL URL ${JSON.stringify(redact(url))}; expected postgres://user@host:port/database`);
  }
  const fromUrl = parsed.searchParams.get("schema") ?? undefined;
  parsed.searchParams.delete("schema");
  if (schemaOption !== undefined && fromUrl !== undefined && schemaOption !== fromUrl) {
    throw new InvalidInputError(`the PostgreSQL URL names schema "${fromUrl}" but the options name "${schemaOption}"; name it once`);
  }
  const schema = checkSchemaName(schemaOption ?? fromUrl ?? schemaNameDefault);
  const connectionString = parsed.toString();
  const shown = new URL(connectionString);
  if (shown.password !== "") shown.password = "***";
  shown.searchParams.set("schema", schema);
  return { connectionString, schema, redactedUrl: shown.toString() };
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
}

const int8Oid = 20;

/** Type parsers of the store's connections: int8 as a JavaScript number. */
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === int8Oid ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

/** The pool, with every connection's `error` handled: a backend that is
 * terminated (57P01: a failover, a restart, an idle-connection reaper) or a
 * socket that drops makes `pg` emit `error` on its client, and an `error`
 * event nobody listens to ends the Node process. An idle connection is
 * dropped by the pool (its `error` event); one checked out fails the query
 * in progress, or the next one, which reports it to its operation.
 * `lost` hears of each, for the log. */
export function createPool(location: PostgresLocation, size: number, lost: (error: Error) => void): pg.Pool {
  const pool = new pg.Pool({
    connectionString: location.connectionString,
    max: size,
    connectionTimeoutMillis: connectTimeoutMs,
    options: `-c search_path=${quotedIdentifier(location.schema)}`,
    types,
    application_name: "phronomy",
  });
  pool.on("error", lost);
  pool.on("connect", (client) => client.on("error", lost));
  return pool;
}
