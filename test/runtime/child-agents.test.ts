// Agents as tools of other agents, run as durable child executions
// (docs/decisions/0079), through the public API on real SQLite files: the
// parent waits (a `child` wait, a row), the child runs in its own
// conversation linked to its parent, and its end resumes the parent once:
// its output is the call's result, its failure the call's error. Waits
// inside the child are listed and answered like any other, with the
// parent named; cancelling the parent cancels the child; a restart in the
// middle finishes both.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { agentTool, Phronomy, tool, type Environment } from "../../host/index.js";
import type { ConversationMessage } from "../../host/agent/messages.js";
import { openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, waitFor } from "./helpers.js";

/** The result the parent's model was told for its last tool call. */
function toldResult(messages: readonly ConversationMessage[]): unknown {
  const told = messages.at(-1);
  return told?.role === "tool" ? told.results[0]?.output : undefined;
}

/** A parent that asks the `research` agent, then answers with what it said. */
function parentModel(seen: { result?: unknown } = {}) {
  return scriptedModel(({ messages }) => {
    if (messages.at(-1)?.role !== "tool") return { toolCalls: [{ toolName: "research", input: { input: "kettles" } }] };
    seen.result = toldResult(messages);
    return { text: `parent: ${JSON.stringify(seen.result)}` };
  });
}

/** A child that answers at once with what it was asked. */
const childModel = scriptedModel(({ messages }) => {
  const asked = messages.find((message) => message.role === "user");
  return { text: `found ${typeof asked?.content === "string" ? asked.content : JSON.stringify(asked?.content)}` };
});

/** Defines the child ("researcher") and the parent ("support") whose tool it is. */
function define(
  env: Environment,
  options: { childTools?: Parameters<Environment["agent"]>[0]["tools"]; seen?: { result?: unknown }; childModel?: typeof childModel } = {},
) {
  const researcher = env.agent({ name: "researcher", model: options.childModel ?? childModel, tools: options.childTools ?? {} });
  const research = agentTool(researcher, { description: "Researches a topic" });
  const support = env.agent({ name: "support", model: parentModel(options.seen), tools: { research } });
  return { researcher, support };
}

describe("child agents", () => {
  it("runs the child in its own conversation, linked to the parent, and completes the parent with its output", async () => {
    const env = await openEnvironment({ store: await temporaryStorePath() });
    const seen: { result?: unknown } = {};
    const { support } = define(env, { seen });
    const run = support.conversation("ana").start("find me a kettle");
    const result = await run.result;
    expect(result.output).toBe('parent: "found kettles"');
    expect(seen.result).toBe("found kettles");
    const parentId = await run.executionId;
    // The child: its own execution and conversation, its parent stored with it.
    const children = (await env.executions({ agentId: undefined })).filter((row) => row.executionId !== parentId);
    expect(children).toHaveLength(1);
    const child = children[0]!;
    expect(child.outcome).toBe("completed");
    expect(child.agentId).not.toBe("ana");
    expect(child.metadata.config?.["parent"]).toMatchObject({ executionId: parentId, agentId: "ana" });
    // The parent's timeline: it waited for that child, and was resumed once by its end.
    const steps = await env.timeline(parentId);
    const requested = steps.filter((step) => step.kind === "approval_requested");
    expect(requested).toHaveLength(1);
    expect(requested[0]!.payload).toMatchObject({ approvalRequest: { kind: "child", child: { executionId: child.executionId, definition: "researcher" } } });
    expect(steps.filter((step) => step.kind === "approval_decided")).toHaveLength(1);
    // The tree, from either end.
    const tree = await env.executionTree(parentId);
    expect(tree?.parent).toBeUndefined();
    expect(tree?.children.map((node) => node.execution.executionId)).toEqual([child.executionId]);
    expect((await env.executionTree(child.executionId))?.parent).toEqual({ executionId: parentId, agentId: "ana", callId: "call-0-0" });
    expect(await env.executionTree("no-such-execution")).toBeUndefined();
    // A chat shows the wait as a data part naming the child, never as an approval to answer.
    const chunks: { type: string; data?: unknown }[] = [];
    const reader = (await env.stream(parentId)).getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) chunks.push(read.value as { type: string; data?: unknown });
    expect(chunks.filter((chunk) => chunk.type === "tool-approval-request")).toEqual([]);
    expect(chunks.find((chunk) => chunk.type === "data-wait")?.data).toMatchObject({ kind: "child", childExecutionId: child.executionId });
    await env.close();
  });

  it("tells the parent's model the child's failure as the call's error, and the parent goes on", async () => {
    const env = await openEnvironment({ store: await temporaryStorePath() });
    const seen: { result?: unknown } = {};
    const failing = scriptedModel(() => ({ toolCalls: [{ toolName: "broken", input: {} }] }));
    const broken = tool({
      description: "Fails",
      inputSchema: z.object({}),
      execute: () => {
        throw new Error("no stock data");
      },
    });
    const { support } = define(env, { seen, childModel: failing, childTools: { broken } });
    // The child's model calls the broken tool forever: its turn limit fails it.
    const result = await support.conversation("ana").start("find me a kettle", {}).result;
    // The child's own error, named as its failure (the model sees it as the tool's error).
    expect(seen.result).toMatchObject({ code: "MAX_TURNS_EXCEEDED" });
    expect((seen.result as { message: string }).message).toMatch(/^child execution [0-9a-f-]+ ended failed: /);
    expect(result.outcome).toBe("completed");
    await env.close();
  });

  it("lists a wait inside the child with its parent named, and an answer to it finishes the child, then the parent", async () => {
    const env = await openEnvironment({ store: await temporaryStorePath() });
    const seen: { result?: unknown } = {};
    const lookups: unknown[] = [];
    const lookup = tool({
      description: "Looks up stock",
      inputSchema: z.object({ item: z.string() }),
      needsApproval: true,
      execute: ({ item }) => {
        lookups.push(item);
        return { item, inStock: 3 };
      },
    });
    const asking = scriptedModel(({ messages }) =>
      messages.at(-1)?.role === "tool"
        ? { text: `stock: ${JSON.stringify(toldResult(messages))}` }
        : { toolCalls: [{ toolName: "lookup", input: { item: "kettle" } }] },
    );
    const { support, researcher } = define(env, { seen, childModel: asking, childTools: { lookup } });
    const run = support.conversation("ana").start("find me a kettle");
    const parentId = await run.executionId;
    const approval = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.kind === "approval"));
    expect(approval.parent).toMatchObject({ executionId: parentId, agentId: "ana" });
    // The parent's own wait is listed too, as kind "child", naming the child.
    const parentWait = (await env.pendingApprovals()).find((item) => item.executionId === parentId);
    expect(parentWait?.kind).toBe("child");
    expect(parentWait?.request.child?.executionId).toBe(approval.executionId);
    // A person cannot answer the parent's child wait.
    const byHand = support.conversation("ana").resume(parentId, { waitId: parentWait!.request.approvalId, value: "made up" });
    await expect(byHand.result).rejects.toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "wait_kind", waitKind: "child" } });
    // The child's approval is answered as any other.
    await researcher.conversation(approval.agentId).resume(approval.executionId, { approvalId: approval.request.approvalId, approved: true }).result;
    expect((await run.result).output).toBe(`parent: ${JSON.stringify('stock: {"item":"kettle","inStock":3}')}`);
    expect(lookups).toEqual(["kettle"]);
    await env.close();
  });

  it("cancels the child, and its own child, when the parent is cancelled", async () => {
    const env = await openEnvironment({ store: await temporaryStorePath() });
    const lookup = tool({ description: "Looks up stock", inputSchema: z.object({}), needsApproval: true, execute: () => ({ inStock: 3 }) });
    // Three levels: support → researcher → archivist, which waits for an approval.
    const archivist = env.agent({ name: "archivist", model: scriptedModel(() => ({ toolCalls: [{ toolName: "lookup", input: {} }] })), tools: { lookup } });
    const archive = agentTool(archivist, { description: "Searches the archive" });
    const researcher = env.agent({
      name: "researcher",
      model: scriptedModel(() => ({ toolCalls: [{ toolName: "archive", input: { input: "kettles" } }] })),
      tools: { archive },
    });
    const research = agentTool(researcher, { description: "Researches a topic" });
    const support = env.agent({ name: "support", model: parentModel(), tools: { research } });
    const run = support.conversation("ana").start("find me a kettle");
    const parentId = await run.executionId;
    const deepest = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.kind === "approval"));
    const middle = deepest.parent!.executionId;
    expect((await env.execution(middle))?.metadata.config?.["parent"]).toMatchObject({ executionId: parentId });
    const cancelled = await env.cancel(parentId, { reason: "customer left" });
    expect(cancelled.outcome).toBe("cancelled");
    await expect(run.result).rejects.toMatchObject({ code: "CANCELLED" });
    for (const id of [middle, deepest.executionId]) {
      const row = await waitFor(async () => {
        const found = await env.execution(id);
        return found?.status === "terminal" ? found : undefined;
      });
      expect(row.error).toMatchObject({ code: "CANCELLED" });
    }
    expect(await env.pendingApprovals()).toEqual([]);
    await env.close();
  });

  it("finishes both after a restart in the middle: the child's wait is answered in the next process, and the parent resumes there", async () => {
    const path = await temporaryStorePath();
    const lookup = tool({ description: "Looks up stock", inputSchema: z.object({}), needsApproval: true, execute: () => ({ inStock: 3 }) });
    const asking = scriptedModel(({ messages }) =>
      messages.at(-1)?.role === "tool" ? { text: `stock: ${JSON.stringify(toldResult(messages))}` } : { toolCalls: [{ toolName: "lookup", input: {} }] },
    );
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const parentId = await define(first, { childModel: asking, childTools: { lookup } }).support.conversation("ana").start("find me a kettle").executionId;
    const approval = await waitFor(async () => (await first.pendingApprovals()).find((item) => item.kind === "approval"));
    await first.close();

    const second = await openEnvironment({ store: path });
    const { researcher } = define(second, { childModel: asking, childTools: { lookup } });
    // Both were recovered as they were: the parent waits for the child, the child for its approval.
    const waits = await second.pendingApprovals();
    expect(waits.map((item) => item.kind).sort()).toEqual(["approval", "child"]);
    await researcher.conversation(approval.agentId).resume(approval.executionId, { approvalId: approval.request.approvalId, approved: true }).result;
    const parent = await waitFor(async () => {
      const row = await second.execution(parentId);
      return row?.status === "terminal" ? row : undefined;
    });
    expect(parent).toMatchObject({ outcome: "completed", output: `parent: ${JSON.stringify('stock: {"inStock":3}')}` });
    // Resumed once: one decision on the parent's timeline.
    expect((await second.timeline(parentId)).filter((step) => step.kind === "approval_decided")).toHaveLength(1);
  });

  it("runs the child under its parent's timeout: a child that runs out ends TIMEOUT, told to the parent's model as the call's error", async () => {
    const env = await openEnvironment({ store: await temporaryStorePath() });
    const seen: { result?: unknown } = {};
    // A first run warms the process up (its model calls load the AI SDK).
    await env.agent({ name: "warm", model: childModel }).conversation("warm").start("hello").result;
    const slow = scriptedModel(() => ({ text: "too late" }), { latencyMs: 20_000 });
    const { support } = define(env, { seen, childModel: slow });
    const result = await support.conversation("ana").start("find me a kettle", { timeoutMs: 1_500 }).result;
    expect(seen.result).toMatchObject({ code: "TIMEOUT" });
    expect(result.outcome).toBe("completed");
    await env.close();
  });

  it("gives the parent's call the child's refusal when the child cannot start (its definition is not defined here)", async () => {
    const env = await openEnvironment({ store: await temporaryStorePath() });
    const seen: { result?: unknown } = {};
    const research = agentTool({ name: "ghost" }, { description: "Researches a topic" });
    const support = env.agent({ name: "support", model: parentModel(seen), tools: { research } });
    const result = await support.conversation("ana").start("find me a kettle").result;
    expect(result.outcome).toBe("completed");
    expect(seen.result).toMatchObject({ code: "INVALID_INPUT", details: { reason: "agent_not_defined", definition: "ghost" } });
    await env.close();
  });

  it("refuses a bad agentTool() definition with INVALID_INPUT naming what is wrong", () => {
    expect(() => agentTool({} as { name: string }, { description: "x" })).toThrow(/named agent definition/);
    expect(() => agentTool({ name: "researcher" }, { description: "" })).toThrow(/"description" must be a non-empty string/);
    expect(() => agentTool({ name: "researcher" }, { description: "x", timeout: 3 } as never)).toThrow(/"timeout" is not an option/);
    expect(() => agentTool({ name: "researcher" }, { description: "x", inputSchema: {} as never })).toThrow(/Standard Schema/);
    expect(() => agentTool({ name: "researcher" }, { description: "x", conversation: "fixed" as never })).toThrow(/"conversation" must be a function/);
  });
});
