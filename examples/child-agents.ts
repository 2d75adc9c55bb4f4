// README, "Child agents". Run it (`npx tsx examples/child-agents.ts`): a
// support agent calls a researcher agent as a tool; the researcher runs as
// a durable child execution, waits for an approval inside, and its answer
// resumes the support agent.

import { agentTool, Phronomy, tool } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const env = await Phronomy.open({ store: "./agents.db" });
/** Calls `toolName` once, then answers with what the call returned. */
const callsThen = (toolName: string, input: { [key: string]: string }) =>
  scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    return last?.role === "tool" ? { text: `${toolName} said ${JSON.stringify(last.results[0]?.output)}` } : { toolCalls: [{ toolName, input }] };
  });

// #region readme
const stock = tool({
  description: "Reads the warehouse's stock",
  inputSchema: z.object({ item: z.string() }),
  needsApproval: true, // a wait inside the child, answered like any other
  execute: ({ item }) => ({ item, inStock: 3 }),
});
const researcher = env.agent({ name: "researcher", model: callsThen("stock", { item: "kettle" }), tools: { stock } });

// The researcher as a tool: each call runs it as a child execution in a conversation of its own.
const research = agentTool(researcher, { description: "Finds out what is in stock" });
const support = env.agent({ name: "support", model: callsThen("research", { input: "kettles?" }), tools: { research } });

const run = support.conversation("ana").start("Do you have kettles?");
const parentId = await run.executionId; // the parent waits for its child: a row, across restarts

const [approval] = await waitForApproval(); // the child's approval, its parent named
await researcher.conversation(approval!.agentId).resume(approval!.executionId, { approvalId: approval!.request.approvalId, approved: true });
const { output } = await run.result; // 'research said "stock said {\"item\":\"kettle\",\"inStock\":3}"'
const tree = await env.executionTree(parentId); // the parent, its child, the child's parent link
// #endregion

async function waitForApproval() {
  for (;;) {
    const waiting = (await env.pendingApprovals()).filter((item) => item.kind === "approval");
    if (waiting.length > 0) return waiting;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

console.log("the child's approval names its parent:", approval!.parent?.executionId === parentId);
console.log("output:", output);
console.log(
  "tree:",
  tree?.execution.outcome,
  tree?.children.map((child) => `${child.execution.outcome} (parent ${child.parent?.executionId === parentId ? "linked" : "?"})`).join(", "),
);
await env.close();
