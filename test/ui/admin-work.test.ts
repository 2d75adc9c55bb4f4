// `env.admin` for working from a page (decision 0083): the definitions a
// process has, a message sent to a new or an existing conversation, a
// decision with edited arguments and who decided, a typed wait's value; and
// what each model response records of how it was called.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InvalidInputError, Phronomy, type Json } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { openWorkFixture, supportScript, supportTools, type WorkFixture } from "./work-fixture.js";

const supportModel = scriptedModel(supportScript);

let fixture: WorkFixture;
beforeEach(async () => {
  fixture = await openWorkFixture();
});
afterEach(async () => {
  await fixture.close();
});

const suspended = (status: string) => status === "suspended";
const payloadsOf = async (executionId: string, kind: string) =>
  (await fixture.environment.timeline(executionId)).filter((step) => step.kind === kind).map((step) => step.payload as { [key: string]: Json });

describe("env.admin.definitions and start", () => {
  it("lists the definitions and starts a new conversation, then sends to it again", async () => {
    const admin = fixture.environment.admin;
    expect(admin.definitions()).toEqual([{ name: "support", kind: "conversations" }]);
    const first = await admin.start("support", "hello").result;
    expect(first.output).toBe("You said: hello.");
    const row = (await fixture.environment.execution(first.executionId))!;
    expect(row.agentId).toMatch(/^chat-/);
    const second = await admin.start("support", "again", { conversationId: row.agentId }).result;
    expect(second.output).toBe("You said: again.");
    expect((await admin.executions({ agentId: row.agentId })).map((execution) => execution.executionId)).toEqual([second.executionId, first.executionId]);
  });

  it("refuses an unknown definition and an empty message, naming what there is", () => {
    const admin = fixture.environment.admin;
    expect(() => admin.start("billing", "hello")).toThrow(InvalidInputError);
    expect(() => admin.start("billing", "hello")).toThrow(/no definition "billing".*"support"/);
    expect(() => admin.start("support", "  ")).toThrow(/non-empty/);
  });
});

describe("env.admin.decide beyond yes or no", () => {
  it("approves with edited arguments and records who decided", async () => {
    const admin = fixture.environment.admin;
    const run = admin.start("support", "Refund my order");
    run.result.catch(() => undefined);
    const executionId = await run.executionId;
    await fixture.until(executionId, suspended);
    const [pending] = await admin.approvals();
    const decided = await admin.decide(executionId, {
      approvalId: pending!.request.approvalId,
      argumentsHash: pending!.request.argumentsHash,
      approved: true,
      input: { orderId: "42", amount: 30 },
      callId: pending!.request.toolCalls[0]!.callId,
      decidedBy: "ana@support",
      reason: "partial refund",
    });
    expect((await decided.result).output).toBe('Done: {"orderId":"42","refunded":30}');
    const [decision] = await payloadsOf(executionId, "approval_decided");
    expect(decision).toMatchObject({
      approved: true,
      decidedBy: "ana@support",
      reason: "partial refund",
      action: { kind: "edit", value: { orderId: "42", amount: 30 } },
    });
  });

  it("gives a typed wait its value; a value its schema refuses leaves it pending", async () => {
    const admin = fixture.environment.admin;
    const run = admin.start("support", "When can you deliver?");
    run.result.catch(() => undefined);
    const executionId = await run.executionId;
    await fixture.until(executionId, suspended);
    const [pending] = await admin.approvals();
    expect(pending!.kind).toBe("input");
    const approvalId = pending!.request.approvalId;
    const refused = await admin.decide(executionId, { approvalId, value: { date: "soon", rush: false, slot: "morning", floor: 2 } });
    await expect(refused.result).rejects.toMatchObject({ code: "INVALID_INPUT" });
    expect((await admin.approvals()).map((approval) => approval.executionId)).toEqual([executionId]);
    const value = { date: "2027-03-01", rush: true, slot: "afternoon", floor: 3 };
    const given = await admin.decide(executionId, { approvalId, value, decidedBy: "ana@support" });
    expect((await given.result).output).toBe(`Done: ${JSON.stringify(value)}`);
    expect((await payloadsOf(executionId, "approval_decided"))[0]).toMatchObject({ decidedBy: "ana@support", action: { kind: "value" } });
  });
});

describe("a visitor's decision", () => {
  it("carries the edited arguments and who decided through the approval inbox to the owner; a visitor starts nothing", async () => {
    const admin = fixture.environment.admin;
    const run = admin.start("support", "Refund my order");
    run.result.catch(() => undefined);
    const executionId = await run.executionId;
    await fixture.until(executionId, suspended);
    const visitor = await Phronomy.open({ store: fixture.environment.store.path, visitor: true, logger: { warn: () => undefined } });
    try {
      const [pending] = await visitor.admin.approvals();
      const filed = await visitor.admin.decide(executionId, {
        approvalId: pending!.request.approvalId,
        approved: true,
        input: { orderId: "42", amount: 25 },
        decidedBy: "bo@support",
      });
      expect((await filed.result).output).toBe('Done: {"orderId":"42","refunded":25}');
      expect((await payloadsOf(executionId, "approval_decided"))[0]).toMatchObject({ decidedBy: "bo@support", action: { kind: "edit" } });
      // It has no definitions; one defined there is refused as a visitor's start is.
      expect(visitor.admin.definitions()).toEqual([]);
      visitor.agent({ name: "support", model: supportModel, tools: supportTools });
      await expect(visitor.admin.start("support", "hello").result).rejects.toThrow(/visitor never writes executions/);
    } finally {
      await visitor.close();
    }
  });
});

describe("what a model response records of its call", () => {
  it("records the model id, plain settings, attempts, messages sent, and the system prompt once per session", async () => {
    const run = fixture.environment.admin.start("support", "Refund my order");
    run.result.catch(() => undefined);
    const executionId = await run.executionId;
    await fixture.until(executionId, suspended);
    const [first] = await payloadsOf(executionId, "model_response");
    expect(first).toMatchObject({
      model: expect.any(String),
      settings: { temperature: 0.2 },
      attempts: 1,
      messagesSent: 1,
      system: "You help customers with their orders.",
    });
    const [pending] = await fixture.environment.admin.approvals();
    await (await fixture.environment.admin.decide(executionId, { approvalId: pending!.request.approvalId, approved: true })).result;
    const responses = await payloadsOf(executionId, "model_response");
    expect(responses).toHaveLength(2);
    expect(responses[1]!["messagesSent"]).toBe(3);
    // A resumed execution runs in a new session: it records the prompt again, once.
    expect(responses[1]!["system"]).toBe("You help customers with their orders.");
  });
});
