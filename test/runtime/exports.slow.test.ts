// The names README gives are exported from `phronomy` (issue 11, bug 11):
// `SqliteStore` (with `open` and `openVisitor`), `PostgresStore.open`, and
// the types `ExecutionStore`, `PostgresStore`, `SqliteStoreOptions`,
// `PostgresStoreOptions`; and importing `phronomy` does not load `pg`
// (PostgreSQL's module is loaded by the first `PostgresStore.open`).

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as phronomy from "../../host/index.js";
import type { ExecutionStore, PostgresStore, PostgresStoreOptions, SqliteStoreOptions, SqliteVisitorStore } from "../../host/index.js";
import { runChild } from "../support/child-process.js";
import { temporaryStorePath } from "./helpers.js";

const childScript = fileURLToPath(new URL("./fixtures/exports-child.ts", import.meta.url));

describe("exports", () => {
  it("SqliteStore opens a store and a visitor, both usable as the ExecutionStore of Phronomy.open", async () => {
    const path = await temporaryStorePath();
    const options: SqliteStoreOptions = { synchronous: "NORMAL" };
    const owner: ExecutionStore = await phronomy.SqliteStore.open(path, options);
    const env = await phronomy.Phronomy.open({ store: owner });
    const visitor: SqliteVisitorStore = await phronomy.SqliteStore.openVisitor(path);
    const visiting = await phronomy.Phronomy.open({ store: visitor });
    expect(visiting.visitor).toBe(true);
    expect(await visiting.executions()).toEqual([]);
    await visiting.close();
    await env.close();
    expect(join(path)).toBe(owner.path);
  });

  it("PostgresStore.open is exported and refuses bad options as the store does", async () => {
    const options: PostgresStoreOptions = { poolSize: 0 };
    const opened: Promise<PostgresStore> = phronomy.PostgresStore.open("postgres://nobody@127.0.0.1:1/none", options);
    await expect(opened).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("poolSize must be an integer") });
  });

  it("importing phronomy does not load pg; PostgresStore.open does", async () => {
    const exit = await runChild(childScript, []);
    expect(exit.code, exit.stderr).toBe(0);
    const line = exit.stdout;
    expect(JSON.parse(line)).toEqual({ afterImport: false, refusal: "INVALID_INPUT", afterOpen: true });
  });
});
