// `env.wait` on PostgreSQL from an environment that does not run the
// execution (another process holds the agent's lease), through the public
// API on a fresh schema (docs/decisions/0018): a suspended execution
// rejects the wait with ApprovalRequiredError naming the approval; a
// running one is watched until it ends (its outcome) or suspends.

import { describe, expect, it } from "vitest";
import { ApprovalRequiredError, Phronomy, type Environment } from "../../host/index.js";
import { approvalRefundTool, deferred, recordingLogger, scriptedModel, turnOf, waitFor } from "../runtime/helpers.js";
import { atEnd, freshSchemaUrl } from "./database.js";

async function openOn(url: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => environment.close());
  return environment;
}

describe("env.wait on PostgreSQL where another environment runs the execution", () => {
  it("a suspended execution: ApprovalRequiredError with its approval id; a running one: its outcome once it ends, or ApprovalRequiredError once it suspends", async () => {
    const url = freshSchemaUrl();
    const owner = await openOn(url);
    const observer = await openOn(url);
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

    const first = agent.start("Where is order 42?");
    const firstId = await first.executionId;
    const watched = observer.wait(firstId);
    expect(await watched.executionId).toBe(firstId);
    answer.resolve();
    await expect(watched.result).resolves.toMatchObject({ executionId: firstId, outcome: "completed", output: "Order 42 has shipped." });

    const second = agent.start("Refund order 42");
    const secondId = await second.executionId;
    const suspending = observer.wait(secondId);
    expect(await suspending.executionId).toBe(secondId);
    askApproval.resolve();
    const error = await suspending.result.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    const pending = await waitFor(async () => (await owner.pendingApprovals()).find((item) => item.executionId === secondId), 10_000);
    expect(error).toBeInstanceOf(ApprovalRequiredError);
    expect(error).toMatchObject({ code: "APPROVAL_REQUIRED", executionId: secondId, agentId: "support", approvalId: pending.request.approvalId });
    expect((error as Error).message).not.toContain("env.recover()");

    await expect(observer.wait(secondId).result).rejects.toMatchObject({ code: "APPROVAL_REQUIRED", approvalId: pending.request.approvalId });
    await expect(owner.wait(secondId).result).rejects.toMatchObject({ code: "APPROVAL_REQUIRED", approvalId: pending.request.approvalId });
    await expect(observer.wait(firstId).result).resolves.toMatchObject({ outcome: "completed" });
  });
});
