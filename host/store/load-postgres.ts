// The PostgreSQL store is imported on first use, so that SQLite users never
// load `pg` — an optional peer dependency (issue 17): an application that
// opens a `postgres://` store without it installed is told which package to
// install, instead of a bare "Cannot find package".

import { StoreError } from "../errors.js";

type PostgresStoreModule = typeof import("./postgres-store.js");

/** `pg`'s version range this release is built and tested against. */
export const pgRange = "^8.23.1";

let loading: Promise<PostgresStoreModule> | undefined;

/** The PostgreSQL store's module; StoreError naming `pg` when it is missing. */
export function loadPostgresStore(): Promise<PostgresStoreModule> {
  loading ??= import("./postgres-store.js").catch((error: unknown) => {
    loading = undefined;
    throw missingPg(error) ?? error;
  });
  return loading;
}

/** A StoreError when `error` says the `pg` package could not be found. */
export function missingPg(error: unknown): StoreError | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if ((code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") || !/['"]pg['"]/.test(message)) return undefined;
  return new StoreError(`a postgres:// store needs the optional peer dependency pg, which is not installed: npm install pg@"${pgRange}"`, {
    cause: error,
    details: { missingPackage: "pg" },
  });
}
