// Conversations on PostgreSQL (docs/decisions/0024, 0030): a conversation
// belongs to its partition, so using one or letting it go writes no lease;
// defining many writes nothing; a closed conversation
// refuses starts in another process; recovery at open finds a named
// definition's suspended executions.

import { describe, expect, it } from "vitest";
import { AgentClosedError, Phronomy, type Environment } from "../../host/index.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { agentRunModel, approvalRefundTool, deferred, lookupTool, recordingLogger, scriptedModel, turnOf, waitFor } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

async function openOn(url: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => environment.close());
  return environment;
}

const refundModel = () =>
  scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    return turn === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "Refunded." };
  });

describe("conversations on PostgreSQL", () => {
  it("a conversation costs no lease write: it runs in the process holding its partition, also when started elsewhere (filed for that process)", async () => {
    const schema = freshSchema();
    const url = `${postgresUrl}?schema=${schema}&lease_ms=60000`;
    const first = await openOn(url);
    const second = await openOn(url);
    const definition = { name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } };
    const here = first.agent(definition);
    const there = second.agent(definition);
    for (let index = 0; index < 1_000; index += 1) here.conversation(`user-${index}`);
    const counts = await withClient((client) =>
      client.query(`SELECT (SELECT count(*) FROM ${schema}.agents)::int AS agents, (SELECT count(*) FROM ${schema}.leases)::int AS leases`),
    );
    expect(counts.rows).toEqual([{ agents: 0, leases: 0 }]);
    // The first holds every partition (the second joined; with 60 s leases
    // nothing is rebalanced during the test).
    const partitions = () =>
      withClient(async (client) => (await client.query(`SELECT partition, owner, epoch FROM ${schema}.partitions ORDER BY partition`)).rows);
    const before = await partitions();
    expect(new Set(before.map((row) => row.owner))).toEqual(new Set([(first.store as PostgresStore).leaseOwner]));

    await expect(here.conversation("user-7").start("Where is order 42?").result).resolves.toMatchObject({ outcome: "completed" });
    await waitFor(async () => (first.conversations.liveCount === 0 ? true : undefined));
    // Let go: its partition stays held, and nothing about it was written.
    expect((first.store as PostgresStore).leaseOf("user-7")).toBeDefined();
    expect(await partitions()).toEqual(before);
    // Started in the other process: filed for the holder, which runs it (docs/decisions/0031).
    await expect(there.conversation("user-7").start("And order 43?").result).resolves.toMatchObject({ outcome: "completed" });
    expect(await partitions()).toEqual(before);
  });

  it("a conversation closed in one process refuses starts in another; a named definition recovers its suspended executions at open", async () => {
    const url = `${postgresUrl}?schema=${freshSchema()}`;
    const first = await openOn(url);
    const refunds: string[] = [];
    const support = first.agent({ name: "support", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    await support.conversation("closed").close();
    const executionId = await support.conversation("user-1").start("Refund order 42").executionId;
    await waitFor(async () => (await first.pendingApprovals())[0]);
    await first.close();

    const env = await openOn(url);
    const again = env.agent({ name: "support", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    expect((await again.recovery()).map((item) => [item.agentId, item.executionId, item.status])).toEqual([["user-1", executionId, "suspended"]]);
    await expect(again.conversation("closed").start("hello").result).rejects.toBeInstanceOf(AgentClosedError);
    const pending = (await env.pendingApprovals())[0]!;
    await expect(again.conversation("user-1").resume(executionId, { approvalId: pending.request.approvalId, approved: true }).result).resolves.toMatchObject({
      outcome: "completed",
    });
    expect(refunds).toHaveLength(1);
  });

  it("messages queued on a named definition's conversation run in order, its lease kept meanwhile; then let go; a message queued over a restart runs next", async () => {
    const url = `${postgresUrl}?schema=${freshSchema()}`;
    const first = await openOn(url);
    const echo = () =>
      scriptedModel(({ messages }) => {
        const lastUser = [...messages].reverse().find((message) => message.role === "user") as { content: string } | undefined;
        return turnOf(messages) === 0 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : { text: `echo: ${lastUser?.content ?? ""}` };
      });
    const gate = deferred();
    const support = first.agent({ name: "support", model: echo(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const chat = support.conversation("user-3");
    const runs = [chat.start("m0")];
    await runs[0]!.executionId;
    for (const input of ["m1", "m2", "m3"]) runs.push(chat.start(input));
    await Promise.all(runs.map((run) => run.executionId));
    expect((first.store as PostgresStore).leaseOf("user-3")).toBeDefined();
    gate.resolve();
    expect((await Promise.all(runs.map((run) => run.result))).map((result) => result.output)).toEqual(["echo: m0", "echo: m1", "echo: m2", "echo: m3"]);
    await waitFor(async () => (first.conversations.liveCount === 0 ? true : undefined));
    // Let go; its partition stays held here (docs/decisions/0030).
    expect(first.conversations.liveCount).toBe(0);
    expect((first.store as PostgresStore).leaseOf("user-3")).toBeDefined();

    // Queued behind m4 when the process closes: m4 ends, m5 stays queued
    // with nothing unfinished; the next process's definition runs it.
    const held = deferred();
    const closing = first
      .agent({ name: "closing", model: echo(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: held.promise }) } })
      .conversation("user-4");
    const m4 = closing.start("m4");
    await m4.executionId;
    const m5 = closing.start("m5");
    const m5Id = await m5.executionId;
    const closed = first.close();
    held.resolve();
    await closed;
    await expect(m5.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
    const second = await openOn(url);
    second.agent({ name: "closing", model: echo(), onBusy: "enqueue", tools: { lookup: lookupTool() } });
    const row = await waitFor(async () => {
      const found = await second.execution(m5Id);
      return found?.status === "terminal" ? found : undefined;
    });
    expect(row).toMatchObject({ outcome: "completed", output: "echo: m5" });
  });
});
