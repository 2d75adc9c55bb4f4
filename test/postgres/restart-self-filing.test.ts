// One PostgreSQL process whose connections are killed, then the server
// "restarted" (issue 24, item 10; docs/decisions/0058): its partitions'
// leases lapse while the database is gone, and when it answers again the
// process finds them expired — owned by itself at the old epoch — and
// takes them back at the next epoch. Starts made in between must not be
// filed in the inbox for "the process that holds the partition": nobody
// else does, so the process filed its own starts to itself, handed out
// their execution ids, then refused some of them AGENT_BUSY while it
// recovered, leaving ids the store never heard of.
//
// The server's restart is a proxy (test/support/cuttable-proxy.ts) that
// closes every connection and refuses new ones; the window between the
// process finding its partitions lapsed and taking them back is held open
// by holding the take on its way. The conversations started in it are
// chosen by a seed (printed).

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment, type Run } from "../../host/index.js";
import { echoModel, recordingLogger, waitFor } from "../runtime/helpers.js";
import { CuttableProxy } from "../support/cuttable-proxy.js";
import { generator, seedFrom } from "../support/seeded.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

// Long enough that no lease lapses on a loaded machine before the outage.
const leaseMs = 2_000;

interface Settled {
  readonly executionId: string | undefined;
  readonly end: { readonly output: unknown } | { readonly code: string; readonly message: string };
}

async function settledOf(run: Run): Promise<Settled> {
  const executionId = await run.executionId.then(
    (id) => id,
    () => undefined,
  );
  const end = await run.result.then(
    (result) => ({ output: result.output }),
    (error: { code: string; message: string }) => ({ code: error.code, message: error.message }),
  );
  return { executionId, end };
}

describe("one PostgreSQL process, its connections killed and the server restarted", () => {
  it("files none of its own starts to itself; every execution id it hands out has a row", async () => {
    const seed = seedFrom("PHRONOMY_SELF_FILING_SEED");
    console.log(`restart-self-filing seed ${seed} (replay: PHRONOMY_SELF_FILING_SEED=${seed})`);
    const random = generator(seed);
    const schema = freshSchema();
    const proxy = await CuttableProxy.start(postgresUrl);
    atEnd(() => proxy.close());
    const env: Environment = await Phronomy.open({ store: `${proxy.urlFor(postgresUrl)}?schema=${schema}&lease_ms=${leaseMs}`, logger: recordingLogger() });
    atEnd(() => env.close());
    const agentIds = Array.from({ length: 12 }, (_, index) => `chat-${index}`);
    const agents = agentIds.map((id) => env.agent({ id, model: echoModel({ lookup: false }), onBusy: "enqueue" }));
    for (const result of await Promise.all(agents.map((agent) => agent.start("before").result))) expect(result.output).toBe("echo: before");

    // The server goes away for longer than a lease: every partition lapses.
    await proxy.down();
    await new Promise((resolve) => setTimeout(resolve, 2.5 * leaseMs));
    const take = proxy.holdWhen((text) => text.includes("take_partitions("));
    await proxy.up();
    // The process read its partitions lapsed and is taking them back.
    await take.caught;
    const chosen = agents.filter(() => random() < 0.7);
    if (chosen.length === 0) chosen.push(agents[0]!);
    const runs = chosen.map((agent) => agent.start("during"));
    const during = await Promise.all(
      runs.map((run) =>
        run.executionId.then(
          () => undefined,
          () => undefined,
        ),
      ),
    );
    expect(during).toHaveLength(runs.length);
    take.release();
    const settled = await Promise.all(runs.map(settledOf));

    const story = JSON.stringify({ seed, settled });
    const filed = await withClient(
      async (client) => (await client.query(`SELECT execution_id, state, error FROM ${schema}.approval_inbox WHERE kind = 'start'`)).rows,
    );
    expect(filed, story).toEqual([]);
    // Each Run ran, or was refused with a code before any id was given.
    for (const { executionId, end } of settled) {
      if (executionId === undefined) {
        expect(end, story).toMatchObject({ code: expect.any(String) });
        continue;
      }
      const row = await waitFor(async () => env.execution(executionId), 10_000).catch(() => undefined);
      expect(row, `${executionId}: ${story}`).toBeDefined();
      expect(end, story).toEqual({ output: "echo: during" });
    }
    // And the conversations go on, once the take answered (until then a
    // start is refused as above, and started again as its message says).
    for (const agent of agents) {
      for (let attempt = 1; ; attempt += 1) {
        const ended = await settledOf(agent.start("after"));
        if ("code" in ended.end && ended.end.code === "AGENT_BUSY" && attempt < 50) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          continue;
        }
        expect(ended.end, JSON.stringify(ended)).toEqual({ output: "echo: after" });
        break;
      }
    }
  }, 60_000);
});
