// Waits beyond yes/no answered from another environment on one PostgreSQL
// schema (docs/decisions/0075): the owner runs the agent; a standby
// answers through the approval inbox — edited arguments, and a typed
// wait's value (a refused one first: the owner checks it, the wait stays
// pending). The answer travels in the inbox row; the owner validates and
// commits it.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { humanInput, Phronomy, tool, type Environment, type Json } from "../../host/index.js";
import { recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";

const askDate = humanInput({
  description: "Asks the customer for a delivery date",
  inputSchema: z.object({ question: z.string() }),
  responseSchema: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }),
});

function refundTool(refunds: unknown[]) {
  return tool({
    inputSchema: z.object({ orderId: z.string(), amount: z.number().max(100) }),
    needsApproval: true,
    execute: (input) => {
      refunds.push(input);
      return { refunded: input.amount };
    },
  });
}

/** Calls `toolName` once with `input`, then answers with the result it got. */
function callingModel(toolName: string, input: Json) {
  return scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    if (last?.role !== "tool") return { toolCalls: [{ toolName, input }] };
    return { text: JSON.stringify(last.results[0]?.output) };
  });
}

async function ownerAndStandby(define: (env: Environment) => ReturnType<Environment["agent"]>) {
  const url = `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`;
  const owner = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => owner.close());
  const ownerAgent = define(owner);
  await owner.recovery(ownerAgent.id);
  const standby = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => standby.close());
  const standbyAgent = define(standby);
  await standby.recovery(standbyAgent.id);
  const original = ownerAgent.start("go");
  const executionId = await original.executionId;
  for (let attempt = 0; attempt < 500; attempt += 1) {
    const pending = (await standby.pendingApprovals()).find((item) => item.executionId === executionId);
    if (pending) return { standbyAgent, original, executionId, pending };
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`execution ${executionId} never waited`);
}

describe("waits answered from another environment (PostgreSQL)", () => {
  it("approves with edited arguments from the standby: the owner validates them and the tool runs with them", async () => {
    const refunds: unknown[] = [];
    const define = (env: Environment) =>
      env.agent({ id: "billing", model: callingModel("refund", { orderId: "42", amount: 30 }), tools: { refund: refundTool(refunds) } });
    const { standbyAgent, original, executionId, pending } = await ownerAndStandby(define);
    const approvalId = pending.request.approvalId;
    await expect(standbyAgent.resume(executionId, { approvalId, approved: true, input: { orderId: "42", amount: 900 } }).result).rejects.toMatchObject({
      code: "INVALID_INPUT",
      details: { paths: [["amount"]] },
    });
    const result = await standbyAgent.resume(executionId, { approvalId, approved: true, input: { orderId: "42", amount: 12 }, decidedBy: "ops" }).result;
    expect(result).toMatchObject({ outcome: "completed", output: '{"refunded":12}' });
    await expect(original.result).resolves.toMatchObject({ outcome: "completed" });
    expect(refunds).toEqual([{ orderId: "42", amount: 12 }]);
  });

  it("gives a typed wait its value from the standby, after a value its schema refused", async () => {
    const define = (env: Environment) => env.agent({ id: "booking", model: callingModel("askDate", { question: "When?" }), tools: { askDate } });
    const { standbyAgent, executionId, pending } = await ownerAndStandby(define);
    expect(pending.kind).toBe("input");
    const waitId = pending.request.approvalId;
    await expect(standbyAgent.resume(executionId, { waitId, value: { date: "soon" } }).result).rejects.toMatchObject({ code: "INVALID_INPUT" });
    const result = await standbyAgent.resume(executionId, { waitId, value: { date: "2027-02-01" } }).result;
    expect(result).toMatchObject({ outcome: "completed", output: '{"date":"2027-02-01"}' });
  });
});
