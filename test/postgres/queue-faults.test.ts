// A queued message (onBusy "enqueue") whose start fails on a lost
// connection (issue 24, item 8; docs/decisions/0058): the message is
// durable in the conversation's queue, so a refusal saying "nothing was
// written; retrying is safe" is false — it ran later anyway, after newer
// messages, and twice for an application that retried. The connection is
// cut by a proxy (test/support/cuttable-proxy.ts) just before the head's
// preparation reaches the server, so the read-back finds nothing
// committed (the heads cut are chosen by a seed, printed), or just after
// (it committed, its answer lost), or with the database gone so nothing
// can be read back; and an enqueue whose commit's answer is lost with the
// database keeps its place in the queue.

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment, type Run } from "../../host/index.js";
import { deferred, echoModel, lookupTool, recordingLogger, waitFor } from "../runtime/helpers.js";
import { CuttableProxy } from "../support/cuttable-proxy.js";
import { generator, seedFrom } from "../support/seeded.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";

async function openThrough(proxy: CuttableProxy, schema: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: `${proxy.urlFor(postgresUrl)}?schema=${schema}`, logger: recordingLogger() });
  atEnd(() => environment.close());
  return environment;
}

/** What each Run ended with: its output, or its error's code and message. */
async function endsOf(runs: readonly Run[]): Promise<({ output: unknown } | { code: string; message: string })[]> {
  return Promise.all(
    runs.map((run) =>
      run.result.then(
        (result) => ({ output: result.output }),
        (error: { code: string; message: string }) => ({ code: error.code, message: error.message }),
      ),
    ),
  );
}

describe("a queued message whose start lost its connection (PostgreSQL)", () => {
  it("runs once, in its turn: never refused 'nothing was written' while it stays queued", async () => {
    const seed = seedFrom("PHRONOMY_QUEUE_FAULTS_SEED");
    console.log(`queue-faults seed ${seed} (replay: PHRONOMY_QUEUE_FAULTS_SEED=${seed})`);
    const random = generator(seed);
    const proxy = await CuttableProxy.start(postgresUrl);
    atEnd(() => proxy.close());
    const env = await openThrough(proxy, freshSchema());
    const gate = deferred();
    const agent = env.agent({ id: "chat", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const inputs = Array.from({ length: 6 }, (_, index) => `m${index + 1}`);
    const runs = inputs.map((input) => agent.start(input));
    const ids = await Promise.all(runs.map((run) => run.executionId));
    // The heads whose preparation is cut on its way (one at least).
    const cut = ids.filter(() => random() < 0.5);
    if (cut.length === 0) cut.push(ids[Math.floor(random() * ids.length)]!);
    const cuts = cut.map((id) => proxy.cutWhen((text) => text.includes(`prepare_execution_reporting_first('${id}'`)));
    gate.resolve();
    const ends = await endsOf([first, ...runs]);
    await Promise.all(cuts);

    // Whatever the store still holds runs now (as after a restart).
    await env.recover();
    const rows = await waitFor(async () => {
      const found = await Promise.all(ids.map((id) => env.execution(id)));
      const queued = await env.executions({ status: "queued" });
      return queued.length === 0 && found.every((row) => row === undefined || row.status === "terminal") ? found : undefined;
    }, 20_000);
    const story = JSON.stringify({ seed, cut: cut.map((id) => ids.indexOf(id) + 1), ends });
    // Every message was answered, in the order sent, each once.
    expect(ends, story).toEqual(["m0", ...inputs].map((input) => ({ output: `echo: ${input}` })));
    expect(
      rows.map((row) => row?.output),
      story,
    ).toEqual(inputs.map((input) => `echo: ${input}`));
    const journal = await env.store.readJournal("chat", 100);
    expect(
      journal.filter((record) => record.role === "user").map((record) => record.content),
      story,
    ).toEqual(["m0", ...inputs]);
  }, 60_000);

  it("a head whose preparation's outcome could not be read back (the database gone): it runs once the database is back, in its turn", async () => {
    const proxy = await CuttableProxy.start(postgresUrl);
    atEnd(() => proxy.close());
    const env = await openThrough(proxy, freshSchema());
    const gate = deferred();
    const agent = env.agent({ id: "chat", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const inputs = ["m1", "m2", "m3"];
    const runs = inputs.map((input) => agent.start(input));
    const ids = await Promise.all(runs.map((run) => run.executionId));
    const cut = proxy.cutWhen((text) => text.includes(`prepare_execution_reporting_first('${ids[0]!}'`), { down: true });
    gate.resolve();
    await cut;
    // Down long enough for the read-back to fail (it is not retried).
    await new Promise((resolve) => setTimeout(resolve, 500));
    await proxy.up();
    const ends = await endsOf([first, ...runs]);
    expect(ends).toEqual(["m0", ...inputs].map((input) => ({ output: `echo: ${input}` })));
    const journal = await env.store.readJournal("chat", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", ...inputs]);
    expect(await env.executions({ status: "queued" })).toEqual([]);
  }, 60_000);

  it("a head whose preparation committed but whose answer was lost with the database: its Run follows the execution, which runs once, in its turn", async () => {
    const proxy = await CuttableProxy.start(postgresUrl);
    atEnd(() => proxy.close());
    const env = await openThrough(proxy, freshSchema());
    const gate = deferred();
    const agent = env.agent({ id: "chat", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const inputs = ["m1", "m2", "m3"];
    const runs = inputs.map((input) => agent.start(input));
    const ids = await Promise.all(runs.map((run) => run.executionId));
    const cut = proxy.cutWhen((text) => text.includes(`prepare_execution_reporting_first('${ids[0]!}'`), { forward: true, down: true });
    gate.resolve();
    await cut;
    await new Promise((resolve) => setTimeout(resolve, 500));
    await proxy.up();
    const ends = await endsOf([first, ...runs]);
    expect(ends).toEqual(["m0", ...inputs].map((input) => ({ output: `echo: ${input}` })));
    const journal = await env.store.readJournal("chat", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", ...inputs]);
    expect(await env.executions({ status: "queued" })).toEqual([]);
  }, 60_000);

  it("an enqueue whose commit's answer was lost with the database: the Run waits for the read-back, and the message keeps its place", async () => {
    const proxy = await CuttableProxy.start(postgresUrl);
    atEnd(() => proxy.close());
    const env = await openThrough(proxy, freshSchema());
    const gate = deferred();
    const agent = env.agent({ id: "chat", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    const firstId = await first.executionId;
    await waitFor(async () => ((await env.execution(firstId))?.phase === "dispatching_tools" ? true : undefined));
    // The only transaction with a COMMIT while m0 waits in its tool: m1's enqueue.
    const cut = proxy.cutWhen((text) => text.includes("COMMIT"), { forward: true, down: true });
    const second = agent.start("m1");
    await cut;
    await new Promise((resolve) => setTimeout(resolve, 500));
    await proxy.up();
    const third = agent.start("m2");
    await third.executionId;
    gate.resolve();
    const ends = await endsOf([first, second, third]);
    // Whatever the store still holds runs now (as after a restart).
    await env.recover();
    await waitFor(async () => ((await env.executions({ status: "queued" })).length === 0 ? true : undefined), 20_000);
    expect(ends).toEqual(["m0", "m1", "m2"].map((input) => ({ output: `echo: ${input}` })));
    const journal = await env.store.readJournal("chat", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", "m1", "m2"]);
  }, 60_000);

  it("a head refused while its partition's lease is not renewed in time: its Run waits, and the message runs once, in its turn", async () => {
    const leaseMs = 1_000;
    const proxy = await CuttableProxy.start(postgresUrl);
    atEnd(() => proxy.close());
    const environment = await Phronomy.open({ store: `${proxy.urlFor(postgresUrl)}?schema=${freshSchema()}&lease_ms=${leaseMs}`, logger: recordingLogger() });
    atEnd(() => environment.close());
    const gate = deferred();
    const agent = environment.agent({ id: "chat", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    const firstId = await first.executionId;
    await waitFor(async () => ((await environment.execution(firstId))?.phase === "dispatching_tools" ? true : undefined));
    const runs = ["m1", "m2"].map((input) => agent.start(input));
    await Promise.all(runs.map((run) => run.executionId));
    // The lease tick is held on its way past the admission window, while
    // m0 ends (its writes are fenced by owner and epoch only) and m1 leaves the queue.
    const tick = proxy.holdWhen((text) => text.includes("partition_members"));
    await tick.caught;
    await new Promise((resolve) => setTimeout(resolve, leaseMs));
    gate.resolve();
    await first.result;
    tick.release();
    const ends = await endsOf([first, ...runs]);
    expect(ends).toEqual(["m0", "m1", "m2"].map((input) => ({ output: `echo: ${input}` })));
    const journal = await environment.store.readJournal("chat", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", "m1", "m2"]);
    expect(await environment.executions({ status: "queued" })).toEqual([]);
  }, 60_000);
});
