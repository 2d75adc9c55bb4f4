// README, "Waiting for time". Run it (`npx tsx examples/waiting-for-time.ts`):
// an agent that checks back on an order after a second (a durable timer
// fired on time by the due sweep), one that would wait a day (fired now
// instead), and a question to a person that times out.

import { humanInput, Phronomy, timer, type ApprovalRequest, type Run } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const env = await Phronomy.open({ store: "./agents.db" });
const model = scriptedModel(({ messages }) => {
  const last = messages.at(-1);
  if (last?.role === "tool") return { text: `Back: ${JSON.stringify(last.results[0]?.output)}` };
  const asked = messages.findLast((message) => message.role === "user");
  const text = asked?.role === "user" && typeof asked.content === "string" ? asked.content : "";
  if (text.startsWith("Ask")) return { toolCalls: [{ toolName: "askRating", input: { question: "How did we do?" } }] };
  return { toolCalls: [{ toolName: "checkBack", input: { seconds: text.includes("tomorrow") ? 86_400 : 1 } }] };
});

// #region readme
// A tool whose call waits for time: the execution suspends (a row, nothing
// held in memory) and goes on when it is due — after a restart too, in
// whichever process holds the store. Its result is { firedAt }.
const checkBack = timer({
  description: "Waits before checking the order again",
  inputSchema: z.object({ seconds: z.number().int().positive() }),
  until: ({ seconds }) => seconds * 1000, // milliseconds from now, or a Date
});
// Any wait may have a deadline: past it, the call's result is { timedOut: true }.
const askRating = humanInput({
  inputSchema: z.object({ question: z.string() }),
  responseSchema: z.object({ stars: z.number().int().min(1).max(5) }),
  timeoutMs: 500,
});
const support = env.agent({ id: "support", model, tools: { checkBack, askRating } });

const soon = support.start("Check on order 42 in a second");
const due = await waitingOn(soon); // kind "timer", dueAt: listed by env.pendingApprovals() too
await soon.result; // output: 'Back: {"firedAt":…}', at dueAt

// Fire one now (an operator, a test): the clock's answer, decided by the core,
// so a second fire, or one after a cancel, is refused like a second answer.
const tomorrow = support.start("Check on order 42 tomorrow");
const wait = await waitingOn(tomorrow);
await support.resume(wait.executionId, { waitId: wait.approvalId, fire: true }).result;

const rating = support.start("Ask for a rating");
await rating.result; // output: 'Back: {"timedOut":true}' after 500 ms with no answer
// #endregion

/** The request a run suspended on: its approval_required event (its last). */
async function waitingOn(run: Run): Promise<ApprovalRequest> {
  for await (const event of run.events) if (event.type === "approval_required") return event.request;
  throw new Error("the run did not wait");
}

const firedAt = (output: unknown): number => (JSON.parse(String(output).replace("Back: ", "")) as { firedAt: number }).firedAt;
console.log("timer:", due.kind, firedAt((await soon.result).output) >= (due.dueAt ?? Infinity) ? "fired at its due time" : "fired early");
console.log("fired now:", firedAt((await tomorrow.result).output) < (wait.dueAt ?? 0) ? "a day early" : "on time");
const again = support.resume(wait.executionId, { waitId: wait.approvalId, fire: true });
console.log("a second fire:", await again.result.catch((error: { code?: string }) => error.code));
console.log("rating:", (await rating.result).output);
await env.close();
