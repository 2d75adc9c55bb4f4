// Starting from any process (issue 13 step 3, docs/decisions/0031): a start
// sent to a process that does not hold its conversation's partition is
// filed in the inbox and run by the process that does; the sender's Run
// gets the execution id, the progress events (from the timeline) and the
// outcome. Idempotency keys run a start once wherever they are sent. If the
// owner dies, whoever takes the partition runs what was filed, once.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, tool, type Environment } from "../../host/index.js";
import type { ExecutionEvent } from "../../host/runtime/events.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { agentRunModel, lookupTool, recordingLogger, turnOf, type RecordedCall } from "../runtime/helpers.js";
import { CuttableProxy } from "../support/cuttable-proxy.js";
import { atEnd, postgresUrl, withClient } from "./database.js";
import { freePartitionsSchema } from "./fixtures/free-schema.js";
import { coordinatorForTest, is } from "./fixtures/processes.js";

const leaseMs = 1_000;

/** A schema with one partition (every conversation in it), free. */
function schemaWithOnePartition(): Promise<{ schema: string; url: string }> {
  return freePartitionsSchema(leaseMs, 1);
}

async function openAs(url: string, instanceId: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId } });
  atEnd(() => environment.close());
  return environment;
}

const refundModel = scriptedModel(({ messages }) =>
  turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] } : { text: "Refunded." },
);

function refundTool(calls: string[]) {
  return tool({
    description: "Refunds an order (needs approval)",
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: () => true,
    async execute({ orderId }, { idempotencyKey }) {
      calls.push(idempotencyKey);
      return { refunded: orderId };
    },
  });
}

describe("starting from any process (PostgreSQL)", () => {
  it("a start sent to a process that does not hold the partition runs in the owner: the sender gets the execution id, progress events and the outcome", async () => {
    const { schema, url } = await schemaWithOnePartition();
    const ownerCalls: RecordedCall[] = [];
    const senderCalls: RecordedCall[] = [];
    const owner = await openAs(url, "owner");
    owner.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls: ownerCalls }) } });
    const sender = await openAs(url, "sender");
    const support = sender.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls: senderCalls }) } });
    expect((owner.store as PostgresStore).heldPartitions().length).toBe(1);
    expect((sender.store as PostgresStore).heldPartitions()).toEqual([]);

    const events: ExecutionEvent[] = [];
    const run = support.conversation("customer-1").start("Where is order 42?", { onEvent: (event) => events.push(event) });
    const executionId = await run.executionId;
    // env.wait on it from the sender, before the owner has run it: waited for.
    const waited = sender.wait(executionId);
    const result = await run.result;
    expect(result).toMatchObject({ executionId, agentId: "customer-1", outcome: "completed", output: "Order 42 has shipped." });
    expect(await waited.result).toMatchObject({ executionId, outcome: "completed" });
    await expect(sender.wait("no-such-execution").result).rejects.toMatchObject({ code: "INVALID_INPUT" });
    // Run by the owner only.
    expect(senderCalls).toEqual([]);
    expect(ownerCalls.map((call) => call.idempotencyKey)).toEqual([`${executionId}:call-0-0`, `${executionId}:call-1-0`]);
    expect(events.map((event) => event.type)).toEqual([
      "model_call_started",
      "model_call_finished",
      "tool_call_started",
      "tool_call_finished",
      "model_call_started",
      "model_call_finished",
      "tool_call_started",
      "tool_call_finished",
      "model_call_started",
      "text_delta",
      "model_call_finished",
      "done",
    ]);
    expect(events.filter((event) => event.type === "tool_call_started").map((event) => (event as { idempotencyKey: string }).idempotencyKey)).toEqual([
      `${executionId}:call-0-0`,
      `${executionId}:call-1-0`,
    ]);
    const decisions = await withClient((client) => client.query(`SELECT kind, state, filed_by, claimed_by FROM ${schema}.approval_inbox`));
    expect(decisions.rows).toEqual([{ kind: "start", state: "applied", filed_by: "sender", claimed_by: "owner" }]);

    // The owner's refusal reaches the sender as the error it was.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    atEnd(async () => release());
    const busyOwnerRun = owner
      .agent({ name: "slow", model: agentRunModel(), tools: { lookup: lookupTool({ gate }) } })
      .conversation("c-slow")
      .start("Hold on");
    busyOwnerRun.result.catch(() => undefined);
    await busyOwnerRun.executionId;
    const slow = sender.agent({ name: "slow", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(slow.conversation("c-slow").start("Me too").result).rejects.toMatchObject({ code: "AGENT_BUSY" });
    // Options that cannot travel are refused, nothing filed.
    await expect(support.conversation("customer-2").start("Hi", { signal: new AbortController().signal }).result).rejects.toMatchObject({
      code: "INVALID_INPUT",
      details: { reason: "not_transferable" },
    });
  }, 60_000);

  it("idempotency: one key sent twice to the non-owner and once to the owner runs once; every Run gets its outcome", async () => {
    const { schema, url } = await schemaWithOnePartition();
    const ownerCalls: RecordedCall[] = [];
    const owner = await openAs(url, "owner");
    const here = owner.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls: ownerCalls }) } });
    const sender = await openAs(url, "sender");
    const there = sender.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });

    const runs = [
      there.conversation("customer-1").start("Where is order 42?", { idempotencyKey: "order-42" }),
      there.conversation("customer-1").start("Where is order 42?", { idempotencyKey: "order-42" }),
      here.conversation("customer-1").start("Where is order 42?", { idempotencyKey: "order-42" }),
    ];
    const results = await Promise.all(runs.map((run) => run.result));
    const ids = new Set(results.map((result) => result.executionId));
    expect(ids.size).toBe(1);
    expect(results.every((result) => result.outcome === "completed")).toBe(true);
    const [executionId] = [...ids];
    expect(ownerCalls.map((call) => call.idempotencyKey)).toEqual([`${executionId}:call-0-0`, `${executionId}:call-1-0`]);
    // Sent again after it ended: not run again, the same outcome.
    const again = await there.conversation("customer-1").start("Where is order 42?", { idempotencyKey: "order-42" }).result;
    expect(again).toMatchObject({ executionId, outcome: "completed" });
    const rows = await withClient((client) => client.query(`SELECT count(*)::int AS count FROM ${schema}.executions`));
    expect(rows.rows).toEqual([{ count: 1 }]);
    expect(ownerCalls.length).toBe(2);
    // Another key is another execution.
    const other = await there.conversation("customer-1").start("And order 43?", { idempotencyKey: "order-43" }).result;
    expect(other.executionId).not.toBe(executionId);
  }, 60_000);

  it("a filed start that suspends for approval: the sender hears approval_required, resumes from its side, and gets the outcome", async () => {
    const { url } = await schemaWithOnePartition();
    const refunds: string[] = [];
    const owner = await openAs(url, "owner");
    owner.agent({ name: "billing", model: refundModel, tools: { refund: refundTool(refunds) } });
    const sender = await openAs(url, "sender");
    const billing = sender.agent({ name: "billing", model: refundModel, tools: { refund: refundTool([]) } });
    const conversation = billing.conversation("customer-7");
    const approval = new Promise<{ approvalId: string }>((resolve) => {
      const run = conversation.start("Refund order 42", {
        onEvent: (event) => {
          if (event.type === "approval_required") resolve(event.request);
        },
      });
      run.result.catch(() => undefined);
    });
    const { approvalId } = await approval;
    const [pending] = await sender.pendingApprovals();
    const resumed = await conversation.resume(pending!.executionId, { approvalId, approved: true }).result;
    expect(resumed).toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${pending!.executionId}:${pending!.request.toolCalls[0]!.callId}`]);
  }, 60_000);

  it("queued messages and cancels sent to the non-owner: an enqueued start waits behind the running one in the owner; env.cancel of it from the sender cancels it", async () => {
    const { url } = await schemaWithOnePartition();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const owner = await openAs(url, "owner");
    owner.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ gate }) }, onBusy: "enqueue" });
    const sender = await openAs(url, "sender");
    const support = sender.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const first = support.conversation("c").start("first");
    const firstId = await first.executionId;
    while ((await sender.execution(firstId))?.status !== "active") await new Promise((resolve) => setTimeout(resolve, 20));
    const second = support.conversation("c").start("second", { onBusy: "enqueue" });
    const third = support.conversation("c").start("third", { onBusy: "enqueue" });
    const thirdId = await third.executionId;
    second.result.catch(() => undefined);
    third.result.catch(() => undefined);
    while ((await sender.execution(thirdId))?.status !== "queued") await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await sender.cancel(thirdId, { reason: "changed my mind" })).toMatchObject({ outcome: "cancelled" });
    release();
    expect(await first.result).toMatchObject({ outcome: "completed" });
    expect(await second.result).toMatchObject({ outcome: "completed" });
    await expect(third.result).rejects.toMatchObject({ code: "CANCELLED" });
  }, 60_000);

  it("env.cancel of a start still filed (its owner has not claimed it): cancelled in the inbox, the sender's Run rejects with CANCELLED, and no owner runs it", async () => {
    const { schema, url } = await schemaWithOnePartition();
    // A holder that never claims anything (alive as far as the rows say).
    await withClient((client) =>
      client.query(`UPDATE ${schema}.partitions SET owner = 'elsewhere', epoch = 1, expires_at = clock_timestamp() + interval '1 hour'`),
    );
    const sender = await openAs(url, "sender");
    const support = sender.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const run = support.conversation("c").start("Where is order 42?");
    const executionId = await run.executionId;
    expect(await sender.cancel(executionId, { reason: "not needed" })).toMatchObject({ executionId, outcome: "cancelled" });
    await expect(run.result).rejects.toMatchObject({ code: "CANCELLED" });
    const decisions = await withClient((client) => client.query(`SELECT state FROM ${schema}.approval_inbox WHERE execution_id = $1`, [executionId]));
    expect(decisions.rows).toEqual([{ state: "refused" }]);
    await expect(sender.cancel("no-such-execution")).rejects.toMatchObject({ code: "EXECUTION_NOT_FOUND" });
  }, 60_000);

  it("a start claimed by an owner that then lost the partition: its settlement is refused, it no longer holds that epoch, and the next owner claims it again at its own", async () => {
    // A lease no loaded machine lets lapse under a live b (at 1 s, b's
    // tick came late and it took its partition back at epoch 3).
    const { schema, url } = await freePartitionsSchema(3_000, 1);
    // a behind a proxy, so its lease tick can be held (below).
    const proxy = await CuttableProxy.start(postgresUrl);
    atEnd(() => proxy.close());
    const a = await PostgresStore.open(proxy.urlFor(url), { instanceId: "a" });
    atEnd(() => a.close());
    const b = await PostgresStore.open(url, { instanceId: "b" });
    atEnd(() => b.close());
    expect(a.heldPartitions().map((grant) => grant.epoch)).toEqual([1]);
    expect(await b.fileStart({ decisionId: "d-1", executionId: "e-1", agentId: "c", start: { input: "hello", options: {} }, filedAt: Date.now() })).toEqual({
      decisionId: "d-1",
      filedNow: true,
    });
    // Filed again under the same execution id: the first filing answers.
    expect(await b.fileStart({ decisionId: "d-2", executionId: "e-1", agentId: "c", start: { input: "hello", options: {} }, filedAt: Date.now() })).toEqual({
      decisionId: "d-1",
      filedNow: false,
    });
    await a.acquireLease("c");
    const [claim] = await a.claimDecisions("c", true);
    expect(claim).toMatchObject({ kind: "start", executionId: "e-1", claimedEpoch: 1, claims: 1, start: { input: "hello", options: {} } });
    expect(a.partitionHeldAt("c", 1)).toBe(true);

    // The partition expires under it and b takes it (epoch 2). a's tick is
    // held meanwhile: alive, a would otherwise take its lapsed partition
    // back itself (epoch 2 too) as often as b does — a race of the test's,
    // which expires a live process's lease by hand.
    const aTick = proxy.holdWhen((text) => text.includes("INSERT INTO partition_members"));
    await aTick.caught;
    await withClient((client) => client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp()`));
    expect(await b.acquireLease("c")).toMatchObject({ acquired: true, owner: "b", epoch: 2 });
    aTick.release();
    expect(await a.settleDecision(claim!, { applied: true })).toBe(false);
    while (a.partitionHeldAt("c", 1)) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await a.claimDecisions("c", true)).toEqual([]);
    // (b claims while its admission window is open: on a loaded machine its
    // renewal may be late for a moment.)
    let again: Awaited<ReturnType<PostgresStore["claimDecisions"]>>[number] | undefined;
    for (const until = Date.now() + 10_000; again === undefined && Date.now() < until; ) {
      [again] = await b.claimDecisions("c", true);
      if (again === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // At b's own epoch: 2, or later if b's lease lapsed under load and b
    // took it back (seen once, at epoch 3).
    expect(again).toMatchObject({ decisionId: "d-1", executionId: "e-1", claims: 2 });
    expect(again!.claimedEpoch).toBeGreaterThanOrEqual(2);
    expect(await b.settleDecision(again!, { applied: true })).toBe(true);
  }, 60_000);

  it("the owner killed (kill -9) while running a filed start and before claiming another: the process that takes the partition finishes the first and runs the second, each once", async () => {
    const { schema, url } = await schemaWithOnePartition();
    await withClient((client) => client.query(`CREATE TABLE ${schema}.effects (key text PRIMARY KEY, first_pid integer NOT NULL, attempts integer NOT NULL)`));
    const directory = await mkdtemp(join(tmpdir(), "phronomy-start-any-"));
    atEnd(() => rm(directory, { recursive: true, force: true }));
    // The owner: its lookup waits inside the call for a file that never appears.
    const owner = coordinatorForTest("owner", {
      url,
      databaseUrl: postgresUrl,
      schema,
      agents: ["support"],
      gate: join(directory, "never"),
      instanceId: "owner",
    });
    await owner.waitFor(is("ready"));
    const calls: RecordedCall[] = [];
    const sender = await openAs(url, "sender");
    const support = sender.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls }) } });
    const first = support.start("Where is order 42?", { idempotencyKey: "first" });
    const firstId = await first.executionId;
    const tool = await owner.waitFor(is("tool"));
    expect(tool.key).toBe(`${firstId}:call-0-0`);
    owner.kill("SIGKILL");
    await owner.exited;
    // Filed while the dead owner's partition has not expired yet.
    // (behind the first, which the taker recovers first: enqueued)
    const second = support.start("And order 43?", { idempotencyKey: "second", onBusy: "enqueue" });
    const secondId = await second.executionId;
    // Filed twice: still once.
    const secondAgain = support.start("And order 43?", { idempotencyKey: "second", onBusy: "enqueue" });

    expect(await first.result).toMatchObject({ executionId: firstId, outcome: "completed" });
    expect(await second.result).toMatchObject({ executionId: secondId, outcome: "completed" });
    expect(await secondAgain.result).toMatchObject({ executionId: secondId, outcome: "completed" });
    expect((sender.store as PostgresStore).heldPartitions().length).toBe(1);
    const rows = await withClient((client) =>
      client.query<{ execution_id: string; status: string; outcome: string }>(
        `SELECT execution_id, status, outcome FROM ${schema}.executions ORDER BY created_at`,
      ),
    );
    expect(rows.rows).toEqual([
      { execution_id: firstId, status: "terminal", outcome: "completed" },
      { execution_id: secondId, status: "terminal", outcome: "completed" },
    ]);
    // The first's batch re-dispatched with its recorded key; the second's run here once.
    const keys = calls.map((call) => call.idempotencyKey);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.filter((key) => key.startsWith(`${firstId}:`))).toEqual([`${firstId}:call-0-0`, `${firstId}:call-1-0`]);
    expect(keys.filter((key) => key.startsWith(`${secondId}:`)).length).toBe(2);
    const decisions = await withClient((client) =>
      client.query<{ execution_id: string; state: string }>(`SELECT execution_id, state FROM ${schema}.approval_inbox WHERE kind = 'start' ORDER BY filed_at`),
    );
    expect(decisions.rows).toEqual([
      { execution_id: firstId, state: "applied" },
      { execution_id: secondId, state: "applied" },
    ]);
  }, 90_000);
});
