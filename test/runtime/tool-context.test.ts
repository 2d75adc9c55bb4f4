// What a tool is told of its call beyond the AI SDK's options (issue 27):
// the conversation it works for and the start's metadata — the same in
// `needsApproval` and `execute`, after an approval in the same process, and
// after a restart (the metadata is kept with the execution), so a per-user
// tool finds its user without a global.

import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, tool, type Environment, type ExecutionEvent } from "../../host/index.js";
import { scriptedModel, temporaryStorePath, waitFor } from "./helpers.js";

const opened: Environment[] = [];
afterEach(async () => {
  for (const env of opened.splice(0)) await env.close();
});

async function open(store: string): Promise<Environment> {
  const env = await Phronomy.open({ store });
  opened.push(env);
  return env;
}

interface Seen {
  readonly where: string;
  readonly conversationId: string | undefined;
  readonly metadata: unknown;
}

function refundAgent(env: Environment, seen: Seen[]) {
  const refund = tool({
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: (_input, { conversationId, metadata }) => {
      seen.push({ where: "needsApproval", conversationId, metadata });
      return true;
    },
    execute: (_input, { conversationId, metadata }) => {
      seen.push({ where: "execute", conversationId, metadata });
      return "refunded";
    },
  });
  const model = scriptedModel(({ messages }) =>
    messages.at(-1)?.role === "tool" ? { text: "done" } : { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] },
  );
  return env.agent({ name: "support", model, tools: { refund } });
}

async function suspend(support: ReturnType<typeof refundAgent>): Promise<{ executionId: string; approvalId: string }> {
  let approvalId = "";
  const run = support.conversation("user-7").start("refund order 42", {
    metadata: { tenant: "acme", userId: 7 },
    onEvent: (event: ExecutionEvent) => {
      if (event.type === "approval_required") approvalId = event.request.approvalId;
    },
  });
  const executionId = await run.executionId;
  await waitFor(async () => (approvalId !== "" ? true : undefined));
  return { executionId, approvalId };
}

const told = { conversationId: "user-7", metadata: { tenant: "acme", userId: 7 } };

describe("a tool's conversation and metadata", () => {
  it("needsApproval and execute get them; the same after the approval in this process", async () => {
    const env = await open(await temporaryStorePath());
    const seen: Seen[] = [];
    const support = refundAgent(env, seen);
    const { executionId, approvalId } = await suspend(support);
    const result = await support.conversation("user-7").resume(executionId, { approvalId, approved: true }).result;
    expect(result.outcome).toBe("completed");
    expect(seen).toEqual([
      { where: "needsApproval", ...told },
      { where: "execute", ...told },
    ]);
  });

  it("after a restart, the recovered execution's tool gets the metadata kept with it", async () => {
    const store = await temporaryStorePath();
    const first = await open(store);
    const before: Seen[] = [];
    const { executionId, approvalId } = await suspend(refundAgent(first, before));
    await first.close();
    opened.splice(opened.indexOf(first), 1);
    const second = await open(store);
    const after: Seen[] = [];
    const support = refundAgent(second, after);
    await support.ready;
    const result = await support.conversation("user-7").resume(executionId, { approvalId, approved: true }).result;
    expect(result.outcome).toBe("completed");
    expect(after).toEqual([{ where: "execute", ...told }]);
  });
});
