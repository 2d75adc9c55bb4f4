// onBusy "enqueue" on PostgreSQL (docs/decisions/0025): the conversation's
// queue is the store's `queued_messages` table (migration 6). Queued
// messages run in order, each once; the bound refuses with QUEUE_FULL and
// writes nothing; a queued message is cancelled by id; and after a restart
// the next environment runs what was left queued, in order.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Phronomy, QueueFullError, type Environment } from "../../host/index.js";
import { deferred, echoModel, lookupTool, type RecordedCall, recordingLogger, waitFor } from "../runtime/helpers.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { atEnd, freshSchema, freshSchemaUrl, postgresUrl, withClient } from "./database.js";
import { coordinatorForTest, is } from "./fixtures/processes.js";

async function openOn(url: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => environment.close());
  return environment;
}

describe("onBusy enqueue on PostgreSQL", () => {
  it("runs queued messages in order, each once; bounds the queue; cancels a queued message by id", async () => {
    const env = await openOn(freshSchemaUrl());
    const gate = deferred();
    const calls: RecordedCall[] = [];
    const agent = env.agent({ id: "chat", model: echoModel(), onBusy: "enqueue", queueLimit: 5, tools: { lookup: lookupTool({ calls, gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const runs = Array.from({ length: 5 }, (_, index) => agent.start(`m${index + 1}`));
    const ids = await Promise.all(runs.map((run) => run.executionId));
    const full = agent.start("too many");
    await expect(full.result).rejects.toBeInstanceOf(QueueFullError);
    expect((await env.executions({ status: "queued" })).map((row) => row.executionId).sort()).toEqual([...ids].sort());
    expect(await env.queues.cancelQueued(ids[2]!, "changed my mind")).toBe(true);
    await expect(runs[2]!.result).rejects.toMatchObject({ code: "CANCELLED" });
    gate.resolve();
    const results = await Promise.all([first, ...runs.filter((_, index) => index !== 2)].map((run) => run.result));
    expect(results.map((result) => result.output)).toEqual(["echo: m0", "echo: m1", "echo: m2", "echo: m4", "echo: m5"]);
    expect(calls).toHaveLength(5);
    const journal = await env.store.readJournal("chat", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", "m1", "m2", "m4", "m5"]);
    expect(await env.execution(ids[2]!)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    expect(await env.executions({ status: "queued" })).toEqual([]);
    expect((await env.executions({ agentId: "chat" })).some((row) => row.input === "too many")).toBe(false);
  });

  it("interrupts the running execution while its tool runs: cancelled once the tool settled, then the new message runs", async () => {
    const env = await openOn(freshSchemaUrl());
    const gate = deferred();
    const agent = env.agent({ id: "interrupts", model: echoModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    const firstId = await first.executionId;
    await waitFor(async () => ((await env.execution(firstId))?.phase === "dispatching_tools" ? true : undefined));
    const second = agent.start("m1", { onBusy: "interrupt" });
    const secondId = await second.executionId;
    await expect(first.result).rejects.toMatchObject({ code: "CANCELLED" });
    gate.resolve();
    await expect(second.result).resolves.toMatchObject({ executionId: secondId, output: "echo: m1" });
    expect(await env.execution(firstId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    expect((await env.timeline(secondId))[0]).toMatchObject({ kind: "queued", payload: { interrupt: true } });
  });

  it("after a restart, the next environment runs the messages left queued, in order", async () => {
    const url = freshSchemaUrl();
    const before = await Phronomy.open({ store: url, logger: recordingLogger() });
    const gate = deferred();
    const agent = before.agent({ id: "restart", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const running = agent.start("m0");
    await running.executionId;
    const ids = await Promise.all(["m1", "m2", "m3"].map((input) => agent.start(input).executionId));
    const closing = before.close();
    gate.resolve();
    await closing;
    const after = await openOn(url);
    expect((await after.executions({ status: "queued", agentId: "restart" })).map((row) => row.input).sort()).toEqual(["m1", "m2", "m3"]);
    after.agent({ id: "restart", model: echoModel(), tools: { lookup: lookupTool() } });
    await after.recovery("restart");
    const rows = await waitFor(async () => {
      const found = await Promise.all(ids.map((id) => after.execution(id)));
      return found.every((row) => row?.status === "terminal") ? found : undefined;
    }, 20_000);
    expect(rows.map((row) => row!.output)).toEqual(["echo: m1", "echo: m2", "echo: m3"]);
    const journal = await after.store.readJournal("restart", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", "m1", "m2", "m3"]);
  });

  it("a process killed with messages queued: the process that takes the agent over recovers the running one, then runs the queue in order", async () => {
    const schema = freshSchema();
    // A lease long enough that no live process loses it on a loaded
    // machine; the dead one's expiry is written into its rows below.
    const url = `${postgresUrl}?schema=${schema}&lease_ms=3000`;
    const directory = await mkdtemp(join(tmpdir(), "phronomy-queue-takeover-"));
    atEnd(() => rm(directory, { recursive: true, force: true }));
    await (await PostgresStore.open(url)).close();
    await withClient((client) => client.query(`CREATE TABLE ${schema}.effects (key text PRIMARY KEY, first_pid integer NOT NULL, attempts integer NOT NULL)`));
    // Its tool waits for a file that never appears: it is killed there, with two messages queued.
    const former = coordinatorForTest("former", {
      url,
      databaseUrl: postgresUrl,
      schema,
      agents: ["support"],
      gate: join(directory, "never"),
      onBusy: "enqueue",
    });
    const { owner: formerOwner } = await former.waitFor(is("ready"));
    former.send({ start: "support", input: "m0", tag: "m0" });
    const admittedId = async (tag: string): Promise<string> =>
      ((await former.waitFor((line) => line.type === "admitted" && line.tag === tag)) as { executionId: string }).executionId;
    const runningId = await admittedId("m0");
    const strandedKey = (await former.waitFor(is("tool"))).key;
    former.send({ start: "support", input: "m1", tag: "m1" });
    former.send({ start: "support", input: "m2", tag: "m2" });
    const queuedIds = await Promise.all(["m1", "m2"].map(admittedId));
    former.kill("SIGKILL");
    await former.exited;
    // Its lease runs out now, as it would have on its own.
    await withClient(async (client) => {
      await client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp() WHERE owner = $1`, [formerOwner]);
      await client.query(`UPDATE ${schema}.partition_members SET expires_at = clock_timestamp() WHERE instance_id = $1`, [formerOwner]);
    });

    const successor = await openOn(url);
    expect((await successor.executions({ status: "queued" })).map((row) => row.executionId).sort()).toEqual([...queuedIds].sort());
    const calls: RecordedCall[] = [];
    successor.agent({ id: "support", model: echoModel(), tools: { lookup: lookupTool({ calls }) } });
    const rows = await waitFor(async () => {
      const found = await Promise.all([runningId, ...queuedIds].map((id) => successor.execution(id)));
      return found.every((row) => row?.status === "terminal") ? found : undefined;
    }, 30_000);
    expect(
      rows.map((row) => row!.outcome),
      JSON.stringify(rows.map((row) => row!.error)),
    ).toEqual(["completed", "completed", "completed"]);
    expect(rows.slice(1).map((row) => row!.output)).toEqual(["echo: m1", "echo: m2"]);
    const journal = await successor.store.readJournal("support", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", "m1", "m2"]);
    // The stranded call is dispatched again with its original key; every
    // other call once, each with a key of its own execution.
    expect(strandedKey.startsWith(`${runningId}:`)).toBe(true);
    const keys = calls.map((call) => call.idempotencyKey);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toContain(strandedKey);
    for (const id of queuedIds) expect(keys.filter((key) => key.startsWith(`${id}:`))).toHaveLength(1);
  }, 60_000);
});
