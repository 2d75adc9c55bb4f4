// `postgres.takeIdleHere` (docs/decisions/0101), through the public API:
// two processes on one database, two partitions, one each. A start of a new
// conversation landing at the process that does not hold its partition
// moves the conversation there (the core's `TakeHere`, the store's
// `home_conversation` inside the start's preparation, 0119) and runs there: nothing is filed, the home is
// recorded, the outcome is the run's. A later start at the same process
// runs there again; one at the other process is filed for it (the home
// read, the start placed again: 0112), and a conversation that has rows is filed as before.

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import { partitionOf } from "../../host/store/postgres/partitions.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { agentRunModel, lookupTool, recordingLogger } from "../runtime/helpers.js";
import { atEnd, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";
import { groupedStatementsOf } from "./fixtures/grouped-statements.js";

const leaseMs = 3_000;
const count = 2;

async function openAs(url: string, instanceId: string, takeIdleHere: boolean): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId, takeIdleHere } });
  atEnd(() => environment.close());
  return environment;
}

/** A statement the store's pool sent: its text and its parameters. */
interface Sent {
  readonly text: string;
  readonly values: readonly unknown[];
}

/** The statements the store's pool sends from now on (the lease tick
 * runs on a connection of its own; the inbox's timed poll on the pool). */
function statementsOf(store: PostgresStore): Sent[] {
  const sent: Sent[] = [];
  const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => unknown;
  (store.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const config = args[0] as { text?: unknown; values?: unknown } | string | undefined;
    const text = typeof config === "string" ? config : String(config?.text ?? "");
    const values = Array.isArray(args[1]) ? args[1] : typeof config === "object" && Array.isArray(config.values) ? config.values : [];
    sent.push({ text, values });
    return query(...args);
  };
  return sent;
}

/** The statements naming `id` among their parameters: the conversation's
 * own, not a timed poll's that happened to fall in the window. */
function naming(sent: readonly Sent[], id: string): string[] {
  return sent
    .filter((statement) => statement.values.some((value) => value === id || (Array.isArray(value) && value.includes(id))))
    .map((statement) => statement.text);
}

function conversationIn(partition: number, prefix: string): string {
  for (let index = 0; ; index += 1) if (partitionOf(`${prefix}-${index}`, count) === partition) return `${prefix}-${index}`;
}

type Support = ReturnType<typeof defineSupport>;

function defineSupport(environment: Environment) {
  return environment.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
}

async function setUp(takeIdleHere: boolean): Promise<{ schema: string; sa: Support; sb: Support; storeB: PostgresStore; pa: number; pb: number }> {
  const { schema, url } = await freePartitionsSchema(leaseMs, count);
  const a = await openAs(url, "a", takeIdleHere);
  const b = await openAs(url, "b", takeIdleHere);
  const held = (environment: Environment) => (environment.store as PostgresStore).heldPartitions().map((grant) => grant.partition);
  await eventually(
    () => [held(a).length, held(b).length],
    ([one, other]) => one === 1 && other === 1,
    "each process holds one partition",
  );
  const [sa, sb] = [defineSupport(a), defineSupport(b)];
  return { schema, sa: sa!, sb: sb!, storeB: b.store as PostgresStore, pa: held(a)[0]!, pb: held(b)[0]! };
}

async function inboxRows(schema: string): Promise<number> {
  return withClient(async (client) => (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.approval_inbox`)).rows[0]!.n);
}

describe("takeIdleHere: a new conversation moves to where its start landed (PostgreSQL)", () => {
  it("runs a new conversation's start where it landed, records its home, files nothing; later starts find where it lives", async () => {
    const { schema, sa, sb, storeB, pa, pb } = await setUp(true);
    const id = conversationIn(pa, "landed-at-b");
    const support = sb;
    // b's takeover of its partition has recovered it (its scan read).
    await eventually(
      () => storeB.partitionScanned(conversationIn(pb, "other")),
      (yes) => yes,
      "b's partition recovered",
    );
    const sent = statementsOf(storeB);
    const grouped = groupedStatementsOf(storeB);
    const first = await support.conversation(id).start("Where is order 42?").result;
    expect(first.outcome).toBe("completed");
    // Moved by its preparation (docs/decisions/0119: no statement of its
    // own), then recovered as moved (RecoveryCause.Moved): no read of its
    // rows, its queue or the open scan before it ran, nothing filed.
    expect(sent.filter((statement) => statement.text.includes("home_conversation"))).toHaveLength(0);
    expect(grouped.filter((text) => text.includes("home_conversation") && text.includes("prepare_execution"))).toHaveLength(1);
    expect(naming(sent, id).filter((text) => /FROM executions|FROM queued_messages|approval_inbox/.test(text))).toEqual([]);
    expect(await inboxRows(schema)).toBe(0);
    const homes = await withClient((client) => client.query(`SELECT agent_id, partition, moved_by FROM ${schema}.conversation_homes`));
    expect(homes.rows).toEqual([{ agent_id: id, partition: pb, moved_by: "b" }]);

    // Again at b: runs there, nothing filed.
    const second = await support.conversation(id).start("And order 43?").result;
    expect(second.outcome).toBe("completed");
    expect(await inboxRows(schema)).toBe(0);

    // At a (the conversation's natural partition's holder): it has rows
    // now, so a files it for b. a does not know the home yet: its
    // preparation is fenced out, the store learns the home, and the core
    // places the start again (`refusedStartVerdict`, docs/decisions/0112):
    // filed for b on its first try, no AGENT_BUSY.
    const third = await sa.conversation(id).start("And order 44?").result;
    expect(third).toMatchObject({ outcome: "completed" });
    expect(await inboxRows(schema)).toBe(1);
    const ran = await withClient((client) =>
      client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.executions WHERE agent_id = $1 AND status = 'terminal'`, [id]),
    );
    expect(ran.rows[0]!.n).toBe(3);
  }, 60_000);

  it("off by default: the same start is filed for the holder", async () => {
    const { schema, sb, pa } = await setUp(false);
    const id = conversationIn(pa, "filed");
    const result = await sb.conversation(id).start("Where is order 42?").result;
    expect(result.outcome).toBe("completed");
    expect(await inboxRows(schema)).toBe(1);
    const homes = await withClient((client) => client.query(`SELECT count(*)::int AS n FROM ${schema}.conversation_homes`));
    expect(homes.rows[0]).toEqual({ n: 0 });
  }, 60_000);
});
