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
function define(env: Environment, options: { childTools?: Parameters<Environment["agent"]>[0]["tools"]; seen?: { result?: unknown }; childModel?: typeof childModel } = {}) {
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
    await env.close();
  });
});
