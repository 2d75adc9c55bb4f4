// `Phronomy.open({ store: "postgres://…", postgres: { poolSize, leaseMs,
// schema } })`: the options reach `PostgresStore.open`; unknown keys, bad
// values, a schema or lease named twice, and `postgres` beside a store that
// is not a postgres:// URL are refused before anything is opened.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InvalidInputError, Phronomy } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { agentRunModel, lookupTool, recordingLogger } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

describe("Phronomy.open's postgres options", () => {
  it("pass the pool size, the lease length and the schema to the PostgreSQL store", async () => {
    const schema = freshSchema();
    const env = await Phronomy.open({ store: postgresUrl, postgres: { poolSize: 3, leaseMs: 2_000, schema }, logger: recordingLogger() });
    atEnd(() => env.close());
    const store = env.store as PostgresStore;
    expect(store).toBeInstanceOf(PostgresStore);
    expect(store.schema).toBe(schema);
    expect(store.leaseMs).toBe(2_000);
    expect(store.pool.options.max).toBe(3);
    expect(store.path).toBe(`${postgresUrl}?schema=${schema}`);

    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    expect(await agent.start("Where is order 42?").result).toMatchObject({ outcome: "completed" });
    const [lease] = await withClient(
      async (client) =>
        (
          await client.query<{ owner: string; seconds: number }>(
            `SELECT owner, extract(epoch FROM expires_at - clock_timestamp())::float AS seconds FROM ${schema}.partitions WHERE partition = ${schema}.partition_of('support')`,
          )
        ).rows,
    );
    expect(lease?.owner).toBe(store.leaseOwner);
    expect(lease?.seconds).toBeGreaterThan(0);
    expect(lease?.seconds).toBeLessThanOrEqual(2);
  });

  it("the URL's ?schema= and ?lease_ms= still work, and naming one twice differently is refused", async () => {
    const schema = freshSchema();
    const env = await Phronomy.open({ store: `${postgresUrl}?schema=${schema}&lease_ms=1500`, postgres: { poolSize: 2 }, logger: recordingLogger() });
    atEnd(() => env.close());
    expect(env.store).toMatchObject({ schema, leaseMs: 1_500 });
    await expect(Phronomy.open({ store: `${postgresUrl}?schema=${schema}`, postgres: { schema: "another" } })).rejects.toThrow(
      /names schema "phronomy_test_\w+" but the options name "another"; name it once/,
    );
    await expect(Phronomy.open({ store: `${postgresUrl}?lease_ms=1500`, postgres: { leaseMs: 2_000 } })).rejects.toThrow(
      /lease_ms=1500 but the options name leaseMs 2000; name it once/,
    );
  });

  it("refuses unknown keys by name, bad values, a non-object, and postgres beside a SQLite path or an opened store", async () => {
    const refusal = (options: Parameters<typeof Phronomy.open>[0]) =>
      Phronomy.open(options).then(
        async (env) => {
          await env.close();
          throw new Error("opened");
        },
        (error: unknown) => error,
      );
    const url = `${postgresUrl}?schema=${freshSchema()}`;
    expect(await refusal({ store: url, synchronous: "NORMAL", offloadPolicy: "worker" })).toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining(`"synchronous", "offloadPolicy" apply only to a SQLite file store; here it is a PostgreSQL store`),
    });
    const unknown = await refusal({ store: url, postgres: { pool: 4 } as never });
    expect(unknown).toBeInstanceOf(InvalidInputError);
    expect((unknown as Error).message).toBe(
      `Phronomy.open(options.postgres): unknown option "pool"; allowed: poolSize, leaseMs, schema, instanceId, partitions, balance, takeIdleHere`,
    );
    expect(await refusal({ store: url, postgres: "poolSize=3" as never })).toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining(`"postgres" must be an object { poolSize, leaseMs, schema, instanceId, partitions, balance, takeIdleHere }`),
    });
    expect(await refusal({ store: url, postgres: { takeIdleHere: "yes" as never } })).toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining(`takeIdleHere must be true or false, got "yes"`),
    });
    expect(await refusal({ store: url, postgres: { poolSize: 0 } })).toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining("poolSize must be an integer from 1 to 64, got 0"),
    });
    expect(await refusal({ store: url, postgres: { leaseMs: 50 } })).toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining("leaseMs (the lease length in milliseconds) must be an integer from 100"),
    });
    expect(await refusal({ store: postgresUrl, postgres: { schema: "Bad-Name" } })).toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining(`schema name "Bad-Name" cannot be used: it must match`),
    });

    const directory = await mkdtemp(join(tmpdir(), "phronomy-open-"));
    atEnd(() => rm(directory, { recursive: true, force: true }));
    const path = join(directory, "store.db");
    expect(await refusal({ store: path, postgres: { poolSize: 3 } })).toMatchObject({
      code: "INVALID_INPUT",
      message: `Phronomy.open(options): "postgres" applies only when "store" is a postgres:// URL; here it is the SQLite file ${JSON.stringify(path)}`,
    });
    const sqlite = await SqliteStore.open(path);
    atEnd(() => sqlite.close());
    expect(await refusal({ store: sqlite, postgres: { leaseMs: 2_000 } })).toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining("here it is a store the application opened (pass these options to PostgresStore.open)"),
    });
  });
});
