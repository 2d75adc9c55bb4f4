// The server CPU of one conversation move (docs/decisions/0116): migration
// 25's `home_conversation` (its text taken from moved-out.ts, created as
// `home_conversation_25`) against migration 26's, in one session of a
// scratch schema (two partitions held by one owner, both flagged, 20,000
// agents rows and journal records): N moves of conversations of partition 0
// into partition 1, each in a subtransaction rolled back, rounds alternated;
// the backend's user + system CPU from /proc (10 ms ticks) per move, the
// empty loop's taken away. Run on the database machine:
// `npx tsx bench/store/home-move-cpu.ts [moves] [rounds]`.
import pg from "pg";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { fenceLockClass } from "../../host/store/postgres/partitions.js";
import { moveLockClass } from "../../host/store/postgres/homes.js";
import { readFileSync } from "node:fs";

const url = process.env["PHRONOMY_TEST_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `bench_home_move_${process.pid}`;
const store = await PostgresStore.open(`${url}?schema=${schema}`, { partitions: 2 });
await store.close();
const client = new pg.Client({ connectionString: url });
await client.connect();
await client.query(`SET search_path = "${schema}"`);
const key = await fenceLockClass(client, schema);
const moveKey = moveLockClass(key);
// Migration 25's move, from moved-out.ts, renamed.
const source = readFileSync(new URL("../../host/store/postgres/moved-out.ts", import.meta.url), "utf8");
const start = source.indexOf("CREATE OR REPLACE FUNCTION home_conversation(");
const end = source.indexOf("END $$;", start) + "END $$;".length;
const sql = source
  .slice(start, end)
  .replace("home_conversation(", "home_conversation_25(")
  .replaceAll("${key}", String(key))
  .replaceAll("${moveKey}", String(moveKey));
await client.query(sql);
await client.query("UPDATE partitions SET owner = 'm', epoch = 1, expires_at = now() + interval '1 hour', moved_out = true");
// Rows in the tables the check reads, so its indexes are not empty.
await client.query("INSERT INTO agents SELECT 'x' || i, 'open', 1, 0, 0 FROM generate_series(1, 20000) AS i");
await client.query(
  "INSERT INTO journal (agent_id, execution_id, role, content, at) SELECT 'x' || i, 'e' || i, 'user', '\"hi\"', 0 FROM generate_series(1, 20000) AS i",
);
await client.query("ANALYZE");
await client.query(`
  CREATE FUNCTION bench_moves(fn text, n integer) RETURNS double precision LANGUAGE plpgsql AS $$
  DECLARE t0 timestamptz; i integer := 0; done integer := 0;
  BEGIN
    t0 := clock_timestamp();
    WHILE done < n LOOP
      i := i + 1;
      CONTINUE WHEN partition_of('c' || i) <> 0;
      done := done + 1;
      BEGIN
        IF fn = 'none' THEN PERFORM 1; ELSE EXECUTE format('SELECT * FROM %I($1, ''m'', 1, 1, 1000)', fn) USING 'c' || i; END IF;
        RAISE EXCEPTION 'rollback' USING ERRCODE = 'P0001';
      EXCEPTION WHEN raise_exception THEN NULL;
      END;
    END LOOP;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6 / n;
  END $$;`);
const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
// The backend's CPU (user + system), in µs, from /proc (10 ms ticks).
const cpu = (): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};
const timed = async (fn: string, n: number): Promise<number> => {
  const before = cpu();
  await client.query("SELECT bench_moves($1, $2) AS us", [fn, n]);
  return (cpu() - before) / n;
};
const n = Number(process.argv[2] ?? 5000);
const rounds = Number(process.argv[3] ?? 4);
const seen: Record<string, number[]> = { home_conversation_25: [], home_conversation: [] };
for (let round = 0; round < rounds; round += 1) {
  const empty = await timed("none", n);
  for (const fn of round % 2 === 0 ? ["home_conversation_25", "home_conversation"] : ["home_conversation", "home_conversation_25"]) {
    const us = await timed(fn, n);
    seen[fn]!.push(us - empty);
  }
}
console.log(JSON.stringify(Object.fromEntries(Object.entries(seen).map(([fn, values]) => [fn, values.map((v) => Math.round(v * 10) / 10)]))));
await client.query(`DROP SCHEMA "${schema}" CASCADE`);
await client.end();
