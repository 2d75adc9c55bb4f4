// The reason a definition's `toolApproval` gives for asking a person
// (`{ type: "user-approval", reason }`, AI SDK 7) reaches who decides: the
// approval request's call carries it, and the chat stream sends it as the
// AI SDK does, so `useChat` shows it as the part's `approval.requestReason`
// (decision 0081). Through the public API and the AI SDK's own `Chat`.

import { lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { chatRoutes, tool, type ApprovalRequest, type Environment } from "../../host/index.js";
import { deferred, openEnvironment, turnOf, waitFor } from "../runtime/helpers.js";
import { Chat, transportTo } from "../support/memory-chat.js";

let env: Environment | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const refundReason = "refunds over 100 EUR need a person";

function refundAgent(environment: Environment) {
  const refund = tool({ inputSchema: z.object({ orderId: z.string() }), execute: ({ orderId }) => ({ refunded: orderId }) });
  const lookup = tool({ inputSchema: z.object({ orderId: z.string() }), execute: ({ orderId }) => ({ orderId, status: "shipped" }) });
  const model = scriptedModel(({ messages }) =>
    turnOf(messages) === 0
      ? {
          toolCalls: [
            { toolName: "refund", input: { orderId: "42" } },
            { toolName: "lookup", input: { orderId: "42" } },
          ],
        }
      : { text: "Done." },
  );
  return environment.agent({
    name: "support",
    model,
    tools: { refund, lookup },
    toolApproval: { refund: { type: "user-approval", reason: refundReason }, lookup: "user-approval" },
  });
}

describe("the reason toolApproval gives for asking", () => {
  it("is on the approval request's call; a status without one adds none", async () => {
    env = await openEnvironment();
    const agent = refundAgent(env).conversation("c-1");
    const asked = deferred<ApprovalRequest>();
    const run = agent.start("refund 42", {
      onEvent: (event) => {
        if (event.type === "approval_required") asked.resolve(event.request);
      },
    });
    const request = await asked.promise;
    expect(request.toolCalls).toEqual([
      { callId: expect.any(String), toolName: "refund", input: { orderId: "42" }, reason: refundReason },
      { callId: expect.any(String), toolName: "lookup", input: { orderId: "42" } },
    ]);
    const [pending] = await env.pendingApprovals();
    expect(pending!.request.toolCalls[0]!.reason).toBe(refundReason);
    await expect(agent.resume(await run.executionId, { approvalId: request.approvalId, approved: true }).result).resolves.toMatchObject({
      outcome: "completed",
      output: "Done.",
    });
  });

  it("reaches useChat's part as approval.requestReason, live and from the history", async () => {
    env = await openEnvironment();
    const support = refundAgent(env);
    const routes = chatRoutes(env, support);
    const chat = new Chat({ id: "c-2", transport: transportTo(routes), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    await chat.sendMessage({ text: "refund 42" });
    const requestReasons = (message: UIMessage | undefined) =>
      (message?.parts ?? [])
        .filter((part) => part.type.startsWith("tool-"))
        .map((part) => (part as { approval?: { requestReason?: string } }).approval?.requestReason ?? null);
    await waitFor(async () => (chat.status === "ready" && requestReasons(chat.messages.at(-1)).length === 2 ? true : undefined));
    expect(requestReasons(chat.messages.at(-1))).toEqual([refundReason, null]);
    const history = await support.conversation("c-2").messages();
    expect(requestReasons(history.at(-1) as UIMessage)).toEqual([refundReason, null]);
  });
});
