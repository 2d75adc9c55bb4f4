// README, "Waiting for a person". Run it (`npx tsx examples/waiting-for-a-person.ts`):
// a refund approved with a smaller amount than the model asked for, then a
// delivery date asked of the customer — refused once by its schema, then given.

import { humanInput, Phronomy, tool, type ApprovalRequest, type Run } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const env = await Phronomy.open({ store: "./agents.db" });
const model = scriptedModel(({ messages }) => {
  const last = messages.at(-1);
  if (last?.role === "tool") return { text: `Done: ${JSON.stringify(last.results[0]?.output)}` };
  const asked = messages.findLast((message) => message.role === "user");
  const text = asked?.role === "user" && typeof asked.content === "string" ? asked.content : "";
  return text.startsWith("Refund")
    ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 80 } }] }
    : { toolCalls: [{ toolName: "askDeliveryDate", input: { question: "Which day suits you?" } }] };
});

// #region readme
const refund = tool({
  description: "Refunds an order",
  inputSchema: z.object({ orderId: z.string(), amount: z.number().max(100) }),
  needsApproval: true,
  execute: ({ orderId, amount }) => ({ orderId, refunded: amount }),
});
// A tool whose call waits for a person: no code runs, the value given is its result.
const askDeliveryDate = humanInput({
  description: "Asks the customer for a delivery date",
  inputSchema: z.object({ question: z.string() }),
  responseSchema: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a date as YYYY-MM-DD") }),
});
const support = env.agent({ id: "support", model, tools: { refund, askDeliveryDate } });

// Approve with edited arguments (or `respond: value` to answer in place of the tool).
const refundRun = support.start("Refund order 42");
const approval = await waitingOn(refundRun); // kind "approval": the tool calls and their arguments
await support.resume(approval.executionId, {
  approvalId: approval.approvalId,
  approved: true,
  input: { orderId: "42", amount: 30 }, // checked against refund's inputSchema
  decidedBy: "ana@support",
  reason: "partial refund",
}).result; // output: 'Done: {"orderId":"42","refunded":30}'

// A typed wait: resumed with a value its schema accepts, from any process on the store.
const dateRun = support.start("When can you deliver?");
const wait = await waitingOn(dateRun); // kind "input"; responseSchema: a JSON Schema to render a form from
const refused = support.resume(wait.executionId, { waitId: wait.approvalId, value: { date: "next week" } });
await refused.result.catch((error) => error.code); // "INVALID_INPUT": the wait is still pending
await support.resume(wait.executionId, { waitId: wait.approvalId, value: { date: "2027-03-01" } }).result; // output: 'Done: {"date":"2027-03-01"}'
// #endregion

/** The request a run suspended on: its approval_required event (its last). */
async function waitingOn(run: Run): Promise<ApprovalRequest> {
  for await (const event of run.events) if (event.type === "approval_required") return event.request;
  throw new Error("the run did not wait");
}

console.log("approval:", approval.kind ?? "approval", (await refundRun.result).output);
console.log("refused:", await refused.result.catch((error: { code?: string }) => error.code));
console.log("wait:", wait.kind, (await dateRun.result).output);
const again = support.resume(wait.executionId, { waitId: wait.approvalId, value: { date: "2027-03-02" } });
console.log("a second value:", await again.result.catch((error: { code?: string }) => error.code));
await env.close();
