// Child agents on one PostgreSQL schema shared by two environments
// (docs/decisions/0079): a parent's child is started as a keyed start in
// its own conversation — run by whichever environment holds that
// conversation's partition — and the child's terminal commit files its end
// in the approval inbox, where the parent's owner claims it and resumes
// the parent. Every parent completes once with its child's output.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { agentTool, Phronomy, tool, type Environment } from "../../host/index.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";

/** The researcher answers naming the environment that ran it; the parent
 * answers with what its tool call was told. `childConversation` places
 * the child (default: derived from the parent's execution and call). */
function define(env: Environment, name: string, childConversation?: () => string) {
  const researcher = env.agent({ name: "researcher", model: scriptedModel(() => ({ text: `found by ${name}` })) });
  const research = agentTool(researcher, { description: "Researches a topic", ...(childConversation ? { conversation: childConversation } : {}) });
  const parentModel = scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    if (last?.role !== "tool") return { toolCalls: [{ toolName: "research", input: { input: "kettles" } }] };
    return { text: `${name} was told ${JSON.stringify(last.results[0]?.output)}` };
  });
  return env.agent({ name: "support", model: parentModel, tools: { research } });
}

describe("child agents (PostgreSQL)", () => {
  it("runs each child where its conversation is held and resumes its parent where the parent is held", async () => {
    const url = `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`;
    const first = await Phronomy.open({ store: url, logger: recordingLogger() });
    atEnd(() => first.close());
    const second = await Phronomy.open({ store: url, logger: recordingLogger() });
    atEnd(() => second.close());
    const supportFirst = define(first, "first");
    define(second, "second");
    const users = Array.from({ length: 12 }, (_, index) => `user-${index}`);
    const results = await Promise.all(users.map((user) => supportFirst.conversation(user).start("find me a kettle").result));
    const outputs = results.map((result) => String(result.output));
    for (const output of outputs) expect(output).toMatch(/^(first|second) was told "found by (first|second)"$/);
    // Each parent was resumed once.
    for (const result of results) {
      const decided = (await first.timeline(result.executionId)).filter((step) => step.kind === "approval_decided");
      expect(decided).toHaveLength(1);
    }
  });

  it("runs the child in the other process when that one holds the child's conversation, and the parent resumes in its own", async () => {
    const { url } = await freePartitionsSchema(3_000, 2);
    const first = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "first" } });
    atEnd(() => first.close());
    const second = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "second" } });
    atEnd(() => second.close());
    const firstStore = first.store as PostgresStore;
    const secondStore = second.store as PostgresStore;
    // The two split the partitions; a parent conversation held by the first, a child's by the second.
    await eventually(
      () => secondStore.heldPartitions().length,
      (held) => held === 1,
      "the second holds a partition",
    );
    const heldBySecond = new Set(secondStore.heldPartitions().map((grant) => grant.partition));
    const ids = Array.from({ length: 64 }, (_, index) => `conversation-${index}`);
    const parentId = ids.find((id) => !heldBySecond.has(firstStore.partitionOf(id)))!;
    const childId = ids.find((id) => heldBySecond.has(firstStore.partitionOf(id)))!;
    const support = define(first, "first", () => childId);
    define(second, "second", () => childId);
    const result = await support.conversation(parentId).start("find me a kettle").result;
    expect(result.output).toBe('first was told "found by second"');
    const decided = (await first.timeline(result.executionId)).filter((step) => step.kind === "approval_decided");
    expect(decided).toHaveLength(1);
  });

  it("answers a wait inside the child from the other process, and refuses a person's answer to the parent's child wait there, filing nothing", async () => {
    const { url } = await freePartitionsSchema(3_000, 1);
    const owner = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "owner" } });
    atEnd(() => owner.close());
    await eventually(
      () => (owner.store as PostgresStore).heldPartitions().length,
      (held) => held === 1,
      "the owner holds the partition",
    );
    const standby = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "standby" } });
    atEnd(() => standby.close());
    const defineWaiting = (env: Environment) => {
      const stock = tool({ description: "Reads stock", inputSchema: z.object({}), needsApproval: true, execute: () => ({ inStock: 3 }) });
      const researcher = env.agent({
        name: "researcher",
        model: scriptedModel(({ messages }) =>
          messages.at(-1)?.role === "tool" ? { text: "three in stock" } : { toolCalls: [{ toolName: "stock", input: {} }] },
        ),
        tools: { stock },
      });
      const research = agentTool(researcher, { description: "Researches a topic" });
      const parentModel = scriptedModel(({ messages }) => {
        const last = messages.at(-1);
        return last?.role === "tool"
          ? { text: `told ${JSON.stringify(last.results[0]?.output)}` }
          : { toolCalls: [{ toolName: "research", input: { input: "kettles" } }] };
      });
      return { researcher, support: env.agent({ name: "support", model: parentModel, tools: { research } }) };
    };
    const here = defineWaiting(owner);
    const there = defineWaiting(standby);
    const run = here.support.conversation("ana").start("find me a kettle");
    const parentId = await run.executionId;
    const approval = await eventually(
      async () => (await standby.pendingApprovals()).find((item) => item.kind === "approval"),
      (found) => found !== undefined,
      "the child waits for its approval",
    );
    const parentWait = (await standby.pendingApprovals()).find((item) => item.executionId === parentId)!;
    expect(parentWait.kind).toBe("child");
    await expect(there.support.conversation("ana").resume(parentId, { waitId: parentWait.request.approvalId, value: "made up" }).result).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
      message: expect.stringContaining("nothing was filed"),
      details: { waitKind: "child" },
    });
    await there.researcher.conversation(approval!.agentId).resume(approval!.executionId, { approvalId: approval!.request.approvalId, approved: true }).result;
    await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: 'told "three in stock"' });
  });
});
