// The PostgreSQL schema name (issue 11, Security; docs/decisions/0019): it
// is always written into SQL quoted, so a reserved word is a schema like
// any other — the store opens in it, runs, and its tables land there and
// nowhere else. A name the store cannot use is refused with INVALID_INPUT
// naming it and why, before anything is created: `public`, `pg_…`,
// `information_schema`, empty, longer than 63 bytes, holding a quote.

import { randomInt } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Phronomy, PhronomyError } from "../../host/index.js";
import { agentRunModel, lookupTool, recordingLogger } from "../runtime/helpers.js";
import { atEnd, postgresUrl, withClient } from "./database.js";

/** Reserved words of PostgreSQL (not usable unquoted as a schema name);
 * one is picked at random so two runs of this test rarely share one. */
const reservedWords = ["select", "table", "order", "group", "where", "from", "limit", "user", "grant", "check", "column", "constraint"];

async function tablesIn(schema: string): Promise<string[]> {
  const found = await withClient((client) =>
    client.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name", [schema]),
  );
  return found.rows.map((row) => row.table_name);
}

/** Schemas that tests running beside this file create and drop: their
 * fresh schemas (database.ts), a reserved word of the first test here run
 * by another worktree, sessions' temporary schemas. No name refused below
 * is one of them, so "creating nothing" is checked on the other names. */
function madeByOtherTests(name: string): boolean {
  return name.startsWith("phronomy_test_") || /^pg_(toast_)?temp_[0-9]+$/.test(name) || reservedWords.includes(name);
}

async function schemaNames(): Promise<string[]> {
  const found = await withClient((client) => client.query<{ nspname: string }>("SELECT nspname FROM pg_namespace ORDER BY nspname"));
  return found.rows.map((row) => row.nspname).filter((name) => !madeByOtherTests(name));
}

describe("PostgreSQL schema names", () => {
  it("a reserved word is a usable schema: the store opens, runs and keeps its tables there", async () => {
    const schema = reservedWords[randomInt(reservedWords.length)]!;
    atEnd(() => withClient((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)));
    console.log(`schema-names: reserved word ${schema}`);
    const publicBefore = await tablesIn("public");
    const env = await Phronomy.open({ store: `${postgresUrl}?schema=${schema}`, logger: recordingLogger() });
    atEnd(() => env.close());
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    expect((await agent.start("Where is order 42?").result).output).toBe("Order 42 has shipped.");
    expect(await env.executions({ outcome: "completed" })).toHaveLength(1);
    expect(await tablesIn(schema)).toEqual(expect.arrayContaining(["agents", "executions", "steps", "journal", "leases", "approval_inbox", "store_version"]));
    expect(await tablesIn("public")).toEqual(publicBefore);
  });

  const refused: [string, string, RegExp][] = [
    ["public", "public", /public is every application's default schema/],
    ["pg_", "pg_store", /belong to PostgreSQL/],
    ["information_schema", "information_schema", /belong to PostgreSQL/],
    ["empty", "", /it is empty/],
    ["too long", "s".repeat(64), /longer than 63 bytes/],
    ["a quote", 'a"b', /holds a double quote/],
    ["upper case", "Store", /must match/],
  ];
  for (const [name, schema, reason] of refused) {
    it(`refuses ${name} with INVALID_INPUT naming it, creating nothing`, async () => {
      const before = await schemaNames();
      for (const open of [
        () => Phronomy.open({ store: `${postgresUrl}?schema=${encodeURIComponent(schema)}` }),
        () => Phronomy.open({ store: postgresUrl, postgres: { schema } }),
      ]) {
        const error = await open().then(
          async (env) => {
            await env.close();
            throw new Error("opened");
          },
          (reason: unknown) => reason,
        );
        expect(error).toBeInstanceOf(PhronomyError);
        expect((error as PhronomyError).code).toBe("INVALID_INPUT");
        expect((error as PhronomyError).message).toContain(`schema name ${JSON.stringify(schema)} cannot be used`);
        expect((error as PhronomyError).message).toMatch(reason);
      }
      expect(await schemaNames()).toEqual(before);
    });
  }
});
