// A visitor environment on a SQLite store (SPEC §4.3,
// docs/decisions/0015-sqlite-visitors.md), beside a live owner environment
// on the same file: the visitor reads, refuses starts and recovery, and its
// `agent.resume` files the decision in the approval inbox; the owner
// notices it, applies it through its local resume path (the tool runs
// once, in the owner) and the visitor's Run settles with the outcome. A
// decision that cannot apply is refused at once, nothing filed.

import { describe, expect, it } from "vitest";
import { ApprovalMismatchError, ApprovalRequiredError, InvalidInputError, Phronomy, type Environment, type ExecutionEvent } from "../../host/index.js";
import { approvalRefundTool, deferred, openEnvironment, recordingLogger, scriptedModel, turnOf } from "./helpers.js";

async function collectTypes(events: AsyncIterable<ExecutionEvent>): Promise<string[]> {
  const types: string[] = [];
  for await (const event of events) types.push(event.type);
  return types;
}

function refundModel() {
  return scriptedModel(({ messages }) => {
    if (turnOf(messages) === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
    const last = messages.at(-1);
    const declined = last?.role === "tool" && last.results.some((result) => result.isError);
    return { text: declined ? "The refund was declined." : "Your refund of 30 is on its way." };
  });
}

function refundAgent(env: Environment, refunds: string[]) {
  return env.agent({
    id: "support",
    model: refundModel(),
    tools: {
      refund: approvalRefundTool(refunds),
    },
  });
}

async function suspendedOwner(refunds: string[]) {
  const owner = await openEnvironment();
  const agent = refundAgent(owner, refunds);
  const executionId = await agent.start("Refund order 42").executionId;
  for (let attempt = 0; attempt < 200 && (await owner.pendingApprovals()).length === 0; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  const [pending] = await owner.pendingApprovals();
  return { owner, executionId, approvalId: pending!.request.approvalId };
}

async function visitorOf(owner: Environment): Promise<Environment> {
  return Phronomy.open({ store: owner.store.path, visitor: true, logger: recordingLogger() });
}

describe("a visitor environment beside the owner", () => {
  it("reads, and its resume is applied by the owner; the visitor gets the outcome", async () => {
    const refunds: string[] = [];
    const { owner, executionId, approvalId } = await suspendedOwner(refunds);
    const visitor = await visitorOf(owner);
    try {
      expect(visitor.visitor).toBe(true);
      expect((await visitor.pendingApprovals()).map((pending) => pending.executionId)).toEqual([executionId]);
      expect((await visitor.execution(executionId))?.status).toBe("suspended");
      const agent = refundAgent(visitor, refunds);
      const events: ExecutionEvent[] = [];
      const started = Date.now();
      const run = agent.resume(executionId, { approvalId, approved: true, reason: "ok", onEvent: (event) => events.push(event) });
      expect(await run.executionId).toBe(executionId);
      const result = await run.result;
      expect(result).toMatchObject({ executionId, output: "Your refund of 30 is on its way." });
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(events.map((event) => event.type)).toContain("done");
      expect(refunds, "the tool ran once, in the owner").toEqual([expect.stringMatching(new RegExp(`^${executionId}:`))]);
      expect((await owner.execution(executionId))?.outcome).toBe("completed");
    } finally {
      await visitor.close();
    }
  });

  it("refuses starts, recovery and purges, and decisions that cannot apply, filing nothing", async () => {
    const { owner, executionId } = await suspendedOwner([]);
    const visitor = await visitorOf(owner);
    try {
      const agent = refundAgent(visitor, []);
      const start = await agent.start("hi").result.then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(start).toBeInstanceOf(InvalidInputError);
      expect(start?.message).toContain("a visitor never writes executions");
      await expect(visitor.recover()).rejects.toThrow(/visitor/);
      await expect(visitor.purgeAgent("support")).rejects.toThrow(/visitor/);
      const mismatch = await agent.resume(executionId, { approvalId: "not-it", approved: true }).result.then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(mismatch).toBeInstanceOf(ApprovalMismatchError);
      expect((await owner.execution(executionId))?.status).toBe("suspended");
    } finally {
      await visitor.close();
    }
  });

  it("env.wait on a suspended execution is rejected with ApprovalRequiredError a visitor can act on (decide it with agent.resume)", async () => {
    const { owner, executionId, approvalId } = await suspendedOwner([]);
    const visitor = await visitorOf(owner);
    try {
      const error = await visitor.wait(executionId).result.then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(ApprovalRequiredError);
      expect(error).toMatchObject({ code: "APPROVAL_REQUIRED", executionId, agentId: "support", approvalId });
      expect((error as Error).message).toContain("agent.resume");
      expect((error as Error).message).not.toContain("env.recover()");
    } finally {
      await visitor.close();
    }
  });

  it("env.wait on an execution the owner is running waits for its end: the outcome, or ApprovalRequiredError when it suspends", async () => {
    const owner = await openEnvironment();
    const answer = deferred();
    const askApproval = deferred();
    let executions = 0;
    const agent = owner.agent({
      id: "support",
      model: scriptedModel(async ({ messages }) => {
        if (turnOf(messages) > 0) return { text: "Your refund of 30 is on its way." };
        executions += 1;
        if (executions === 1) {
          await answer.promise;
          return { text: "Order 42 has shipped." };
        }
        await askApproval.promise;
        return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
      }),
      tools: { refund: approvalRefundTool([]) },
    });
    const visitor = await visitorOf(owner);
    try {
      const first = agent.start("Where is order 42?");
      const firstId = await first.executionId;
      const watched = visitor.wait(firstId);
      expect(await watched.executionId).toBe(firstId);
      answer.resolve();
      await expect(watched.result).resolves.toMatchObject({ executionId: firstId, outcome: "completed", output: "Order 42 has shipped." });
      expect((await collectTypes(watched.events)).at(-1)).toBe("done");

      const second = agent.start("Refund order 42");
      const secondId = await second.executionId;
      const suspending = visitor.wait(secondId);
      expect(await suspending.executionId).toBe(secondId);
      askApproval.resolve();
      const error = await suspending.result.then(
        () => undefined,
        (caught: unknown) => caught,
      );
      const [pending] = await owner.pendingApprovals();
      expect(error).toBeInstanceOf(ApprovalRequiredError);
      expect(error).toMatchObject({ code: "APPROVAL_REQUIRED", executionId: secondId, approvalId: pending!.request.approvalId });
    } finally {
      await visitor.close();
    }
  });

  it("a wait still watching when the visitor closes is settled with RuntimeShutdownError; the execution goes on in the owner", async () => {
    const owner = await openEnvironment();
    const answer = deferred();
    const agent = owner.agent({
      id: "support",
      model: scriptedModel(async () => {
        await answer.promise;
        return { text: "done" };
      }),
    });
    const visitor = await visitorOf(owner);
    const run = agent.start("hi");
    const watched = visitor.wait(await run.executionId);
    await watched.executionId;
    await visitor.close();
    await expect(watched.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
    answer.resolve();
    await expect(run.result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("validates the option", async () => {
    await expect(Phronomy.open({ store: "postgres://localhost/db", visitor: true })).rejects.toThrow(/"visitor" applies to a SQLite store/);
    await expect(Phronomy.open({ store: "./x.db", visitor: "yes" as unknown as boolean })).rejects.toThrow(/must be true or false/);
  });
});
