// Keyed event waits on one PostgreSQL schema shared by two environments
// (docs/decisions/0077): the owner commits the wait, the other sends the
// signal — found by its key, filed through the approval inbox, checked and
// committed by the owner (a refused payload first: the wait stays
// pending); a signal the other sends before the wait exists is kept and
// taken by the owner's wait when it commits.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, waitForEvent, type Environment } from "../../host/index.js";
import { recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";

const awaitPayment = waitForEvent({
  inputSchema: z.object({ orderId: z.string() }),
  key: ({ orderId }) => `payment:${orderId}`,
  payloadSchema: z.object({ amount: z.number().positive() }),
});

function paymentModel(orderId: string) {
  return scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    if (last?.role !== "tool") return { toolCalls: [{ toolName: "awaitPayment", input: { orderId } }] };
    return { text: JSON.stringify(last.results[0]?.output) };
  });
}

async function twoEnvironments(orderId: string) {
  const url = `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`;
  const owner = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => owner.close());
  const agent = owner.agent({ id: "checkout", model: paymentModel(orderId), tools: { awaitPayment } });
  await owner.recovery(agent.id);
  // The other process defines the agent too (it validates a payload
  // before filing it), but does not hold its lease.
  const other = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => other.close());
  other.agent({ id: "checkout", model: paymentModel(orderId), tools: { awaitPayment } });
  return { owner, agent, other };
}

async function pendingKey(env: Environment, executionId: string): Promise<string | undefined> {
  for (let attempt = 0; attempt < 500; attempt += 1) {
    const pending = (await env.pendingApprovals()).find((item) => item.executionId === executionId);
    if (pending) return pending.key;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`execution ${executionId} never waited`);
}

describe("keyed event waits across processes (PostgreSQL)", () => {
  it("the owner commits the wait, the other process signals it: a refused payload leaves it pending, a valid one resumes it once", async () => {
    const { agent, other } = await twoEnvironments("42");
    const run = agent.start("go");
    const executionId = await run.executionId;
    expect(await pendingKey(other, executionId)).toBe("payment:42");
    await expect(other.signal("payment:42", { amount: -3 })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    expect(await pendingKey(other, executionId)).toBe("payment:42");
    expect(await other.signal("payment:42", { amount: 30 })).toMatchObject({ status: "resumed", executionId, agentId: "checkout" });
    await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: '{"amount":30}' });
  });

  it("a signal the other process sends before the wait exists is kept, and the owner's wait takes it when it commits", async () => {
    const { agent, other } = await twoEnvironments("7");
    expect(await other.signal("payment:7", { amount: 9 })).toMatchObject({ status: "stored" });
    await expect(other.signal("payment:7", { amount: 10 })).rejects.toMatchObject({ code: "SIGNAL_REFUSED", details: { reason: "already_stored" } });
    const run = agent.start("go");
    await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: '{"amount":9}' });
  });
});
