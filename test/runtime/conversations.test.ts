// Conversations (docs/decisions/0024-conversations.md): a definition by
// name, any number of conversations by id. Defining one writes and reads
// nothing; its core entry exists while it works and is let go when idle;
// a closed one stays closed across restarts; recovery at open finds the
// unfinished executions of conversations the application never names.

import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { AgentBusyError, AgentClosedError, InvalidInputError, Phronomy, type Environment } from "../../host/index.js";
import {
  agentRunModel,
  approvalRefundTool,
  deferred,
  lookupTool,
  openEnvironment,
  recordingLogger,
  scriptedModel,
  temporaryStorePath,
  waitFor,
} from "./helpers.js";

function storeCounts(path: string): { agents: string[]; executions: number } {
  const database = new Database(path, { readonly: true });
  try {
    const agents = (database.prepare("SELECT agent_id FROM agents ORDER BY agent_id").all() as { agent_id: string }[]).map((row) => row.agent_id);
    const executions = (database.prepare("SELECT count(*) AS n FROM executions").get() as { n: number }).n;
    return { agents, executions };
  } finally {
    database.close();
  }
}

/** Resolves once every conversation's core entry was let go. */
function idle(env: Environment): Promise<true> {
  return waitFor(async () => (env.conversations.liveCount === 0 ? true : undefined));
}

const refundModel = () =>
  scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    return turn === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "Refunded." };
  });

describe("conversations", () => {
  it("100,000 conversations defined in one process: nothing written for the idle ones, 200 started on 16 core slots", async () => {
    const path = await temporaryStorePath();
    const env = await openEnvironment({ store: path, limits: { agentsMax: 16 } });
    const support = env.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const conversations = Array.from({ length: 100_000 }, (_, index) => support.conversation(`user-${index}`));
    await support.ready;
    expect(env.conversations.liveCount).toBe(0);
    expect(storeCounts(path)).toEqual({ agents: [], executions: 0 });

    // 200 of them, 10 at a time: more than the core's 16 agent slots in
    // all, so each must give its slot back once idle.
    const started = conversations.filter((_, index) => index % 500 === 0);
    expect(started).toHaveLength(200);
    for (let wave = 0; wave < started.length; wave += 10) {
      const results = await Promise.all(started.slice(wave, wave + 10).map((conversation) => conversation.start("Where is order 42?").result));
      for (const result of results) expect(result.outcome).toBe("completed");
      expect(env.conversations.liveCount).toBeLessThanOrEqual(16);
    }
    await idle(env);
    const counts = storeCounts(path);
    expect(counts.executions).toBe(200);
    expect(counts.agents).toEqual(started.map((conversation) => conversation.id).sort());
  }, 120_000);

  it("an idle conversation's core entry is let go; a later start on it works and remembers the earlier one", async () => {
    const env = await openEnvironment();
    const seen: number[] = [];
    const model = scriptedModel(({ messages }) => {
      seen.push(messages.filter((message) => message.role === "user").length);
      return { text: "Hello." };
    });
    const support = env.agent({ name: "support", model });
    const first = await support.conversation("user-1").start("Hi, I am Ada.").result;
    expect(first.outcome).toBe("completed");
    await idle(env);
    // Another handle on the same conversation: the same agent id, its memory.
    const second = await support.conversation("user-1").start("Who am I?").result;
    expect(second.outcome).toBe("completed");
    expect(seen).toEqual([1, 2]);
    await idle(env);
  });

  it("release() lets a conversation go; refused with AgentBusyError while it runs; a later start uses it again", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const support = env.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const conversation = support.conversation("user-1");
    await conversation.release();
    const running = conversation.start("Where is order 42?");
    await running.executionId;
    await expect(conversation.release()).rejects.toBeInstanceOf(AgentBusyError);
    expect(env.conversations.liveCount).toBe(1);
    gate.resolve();
    await expect(running.result).resolves.toMatchObject({ outcome: "completed" });
    await conversation.release();
    expect(env.conversations.liveCount).toBe(0);
    await expect(conversation.start("again").result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("a suspended conversation keeps its entry until decided; then it is let go", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    const run = support.conversation("user-1").start("Refund order 42");
    const executionId = await run.executionId;
    const pending = await waitFor(async () => (await env.pendingApprovals())[0]);
    await expect(support.conversation("user-1").start("again").result).rejects.toMatchObject({ code: "AGENT_BUSY" });
    expect(env.conversations.liveCount).toBe(1);
    await support.conversation("user-1").resume(executionId, { approvalId: pending.request.approvalId, approved: true }).result;
    await expect(run.result).resolves.toMatchObject({ outcome: "completed" });
    await idle(env);
    expect(refunds).toHaveLength(1);
  });

  it("a closed conversation refuses starts after a restart (its preparation reads the closed root), never having been started", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const support = first.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await support.conversation("used").start("Where is order 42?").result;
    await support.conversation("used").close();
    await support.conversation("never-started").close();
    await first.close();

    const env = await openEnvironment({ store: path });
    const again = env.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    for (const id of ["used", "never-started"]) {
      await expect(again.conversation(id).start("hello").result).rejects.toBeInstanceOf(AgentClosedError);
    }
    await expect(again.conversation("open-one").start("Where is order 42?").result).resolves.toMatchObject({ outcome: "completed" });
    // An agent defined by id: the same, as before.
    const byId = env.agent({ id: "used", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(byId.start("hello").result).rejects.toBeInstanceOf(AgentClosedError);
  });

  it("recovers at open the suspended executions of conversations defined only by name; a definition defined later recovers its own", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const refunds: string[] = [];
    const support = first.agent({ name: "support", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    const billing = first.agent({ name: "billing", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    const ids = await Promise.all(["user-1", "user-2", "user-3"].map((id) => support.conversation(id).start("Refund order 42").executionId));
    const billed = await billing.conversation("account-9").start("Refund order 42").executionId;
    await waitFor(async () => ((await first.pendingApprovals()).length === 4 ? true : undefined));
    await first.close();

    const env = await openEnvironment({ store: path });
    const again = env.agent({ name: "support", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    const report = await again.recovery();
    expect(report.map((item) => [item.agentId, item.executionId, item.status]).sort()).toEqual(
      [
        ["user-1", ids[0], "suspended"],
        ["user-2", ids[1], "suspended"],
        ["user-3", ids[2], "suspended"],
      ].sort(),
    );
    // "billing" is not defined here yet: its execution waits for it.
    expect((await env.recover()).filter((item) => item.executionId === billed)).toEqual([
      expect.objectContaining({ status: "waiting_for_agent", reason: expect.stringContaining(`the definition named "billing"`) }),
    ]);
    const approvals = await env.pendingApprovals();
    const decided = await again
      .conversation("user-2")
      .resume(ids[1]!, { approvalId: approvals.find((item) => item.executionId === ids[1])!.request.approvalId, approved: true }).result;
    expect(decided).toMatchObject({ outcome: "completed", output: "Refunded." });

    const later = env.agent({ name: "billing", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    expect((await later.recovery()).map((item) => [item.agentId, item.status])).toEqual([["account-9", "suspended"]]);
    const pending = (await env.pendingApprovals()).find((item) => item.executionId === billed)!;
    await expect(later.conversation("account-9").resume(billed, { approvalId: pending.request.approvalId, approved: false }).result).resolves.toMatchObject({
      outcome: "completed",
    });
    expect(refunds).toHaveLength(1);
  });

  it("refuses a definition with both or neither of id and name, a name defined twice, and one conversation id in two definitions", async () => {
    const env = await openEnvironment();
    const model = agentRunModel();
    expect(() => env.agent({ id: "a", name: "b", model } as never)).toThrow(/give "id" \(one agent\) or "name".*not both/);
    expect(() => env.agent({ model } as never)).toThrow(/not neither/);
    const gate = deferred();
    const tools = { lookup: lookupTool({ gate: gate.promise }) };
    const support = env.agent({ name: "support", model, tools });
    expect(() => env.agent({ name: "support", model })).toThrow(InvalidInputError);
    expect(() => support.conversation("")).toThrow(/the conversation id must be a non-empty string/);
    const sales = env.agent({ name: "sales", model });
    env.agent({ id: "taken", model, tools });
    expect(() => support.conversation("taken")).toThrow(/conversation "taken" belongs to env\.agent\(\{ id: "taken" \}\)/);
    const running = support.conversation("shared").start("hi");
    await running.executionId;
    expect(() => sales.conversation("shared")).toThrow(/belongs to definition "support"/);
    gate.resolve();
    await expect(running.result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("a new conversation's first use on SQLite (no lease to take) is one loop turn: registered and its recovery asked together (issue 25)", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await support.ready;
    const labels: string[] = [];
    const post = env.loop.post.bind(env.loop);
    env.loop.post = (message, options) => {
      const label = options?.label ?? "";
      if (/^the (first use|recovery) of conversation "user-1"$/.test(label)) labels.push(label.replace(/ of conversation .*/, ""));
      return post(message, options);
    };
    await expect(support.conversation("user-1").start("Where is order 42?").result).resolves.toMatchObject({ outcome: "completed" });
    expect(labels).toEqual(["the first use"]);
    await idle(env);
  });

  it("a suspended conversation is one object of six fields, its own core entry, and keeps no settled readiness (docs/decisions/0066, 0084)", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    const approvals: { executionId: string; approvalId: string }[] = [];
    support.conversation("user-1").start("refund order 42", {
      onEvent: (event) => {
        if (event.type === "approval_required") approvals.push({ executionId: event.executionId, approvalId: event.request.approvalId });
      },
    });
    await waitFor(async () => (approvals.length === 1 ? true : undefined));
    const entry = env.conversations.entryNow("user-1")!;
    const entries = env.coordinator.agentEntries().filter((candidate) => candidate.id === "user-1");
    expect(entries).toHaveLength(1);
    expect(entries[0]).toBe(entry);
    expect(entry).toMatchObject({ id: "user-1", definitionName: "support", users: 0 });
    expect(env.conversations.pendingCount).toBe(0);
    // What its definition gives is read through it, not copied (0084).
    expect(Object.keys(entry).sort()).toEqual(["generation", "id", "kind", "slot", "state", "users"]);
    // A later use still finds the entry ready, and the approval runs.
    await expect(env.conversations.liveEntry("user-1")).resolves.toBe(entry);
    const { executionId, approvalId } = approvals[0]!;
    await expect(support.conversation("user-1").resume(executionId, { approvalId, approved: true }).result).resolves.toMatchObject({ outcome: "completed" });
    expect(refunds).toHaveLength(1);
    await idle(env);
    await env.close();
  });
});
