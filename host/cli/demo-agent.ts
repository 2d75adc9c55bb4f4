// The agent of `phronomy demo`: a support agent whose model is scripted (no
// key, no network) but decides from the conversation like a real one. It
// looks the order up, asks to refund it — a tool that needs a human's
// approval — and answers with what the refund tool returned, or with the
// decline.
//
// The refund tool is exactly-once the way SPEC §4.2 asks a tool to be: it
// keys its effect on the idempotency key Phronomy passes it and records it
// in a ledger (a JSON file beside the store), so a call repeated after a
// crash returns the recorded refund instead of paying twice.
//
// `approve`, `reject` and `recover` use this definition for executions of
// the demo agent when no `--agent-module` is given.

import { createHash } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { objectSchema } from "./demo-schema.js";
import { tool, type AgentDefinition, type ConversationMessage, type Json, type ToolResult } from "../index.js";
import { scriptedModel } from "../testing.js";

export const DEMO_AGENT_ID = "demo-support";

export const DEMO_INPUT = "Hi, my kettle from order 42 arrived broken. Can I get my money back?";

/** Simulated latencies: long enough to see the live progress, short
 * enough that the demo (and its tests) take about a second. */
const modelLatencyMs = 80;
const lookupLatencyMs = 60;

interface Order {
  readonly orderId: string;
  readonly item: string;
  readonly priceCents: number;
  readonly status: string;
}

const orders: Readonly<Record<string, Order>> = {
  "42": { orderId: "42", item: "blue kettle", priceCents: 3990, status: "delivered" },
  "7": { orderId: "7", item: "teapot", priceCents: 2450, status: "in transit" },
};

export interface RefundRecord {
  readonly refundId: string;
  readonly orderId: string;
  readonly amountCents: number;
  readonly idempotencyKey: string;
  readonly issuedAt: string;
}

/** The refund ledger of the demo store at `storePath`. */
export function demoLedgerPath(storePath: string): string {
  return `${storePath}-demo-refunds.json`;
}

export function readRefunds(ledgerPath: string): RefundRecord[] {
  try {
    const parsed = JSON.parse(readFileSync(ledgerPath, "utf8")) as { refunds?: RefundRecord[] };
    return Array.isArray(parsed.refunds) ? parsed.refunds : [];
  } catch {
    return [];
  }
}

function recordRefund(ledgerPath: string, refund: RefundRecord): void {
  const refunds = [...readRefunds(ledgerPath), refund];
  const temporary = `${ledgerPath}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ refunds }, null, 2)}\n`);
  renameSync(temporary, ledgerPath); // a reader sees the old ledger or the new one
}

export function demoAgentDefinition(storePath: string): AgentDefinition {
  const ledgerPath = demoLedgerPath(storePath);

  const lookupOrder = tool({
    description: "Looks an order up by its number",
    inputSchema: objectSchema({ orderId: "string" }),
    execute: async ({ orderId }, { signal }) => {
      await sleep(lookupLatencyMs, undefined, { signal });
      return (orders[orderId] ?? { error: `there is no order ${orderId}` }) as unknown as Json;
    },
  });

  const issueRefund = tool({
    description: "Refunds an order to the customer's card. Needs a support lead's approval.",
    inputSchema: objectSchema({ orderId: "string", amountCents: "positive integer", reason: "string" }),
    needsApproval: true,
    execute: ({ orderId, amountCents }, { idempotencyKey }) => {
      const earlier = readRefunds(ledgerPath).find((refund) => refund.idempotencyKey === idempotencyKey);
      if (earlier) return { ...earlier, repeated: true };
      const refund: RefundRecord = {
        refundId: `R-${createHash("sha256").update(idempotencyKey).digest("hex").slice(0, 8).toUpperCase()}`,
        orderId,
        amountCents,
        idempotencyKey,
        issuedAt: new Date().toISOString(),
      };
      recordRefund(ledgerPath, refund);
      return { ...refund };
    },
  });

  return {
    id: DEMO_AGENT_ID,
    model: scriptedModel(({ messages }) => supportTurn(messages), { latencyMs: modelLatencyMs, modelId: "scripted-support" }),
    instructions: "You are a support agent. Look orders up before answering; refunds need a support lead's approval.",
    tools: { lookupOrder, issueRefund },
  };
}

/** What the scripted model says next, from the current request's messages
 * only (earlier conversations of the agent come before its last user message). */
function supportTurn(messages: readonly ConversationMessage[]) {
  const lastUser = messages.map((message) => message.role).lastIndexOf("user");
  const request = messages[lastUser];
  const question = request?.role === "user" ? request.content : "";
  const orderId = /order\s*#?\s*(\d+)/i.exec(question)?.[1] ?? "42";
  const results = messages.slice(lastUser + 1).flatMap((message) => (message.role === "tool" ? message.results : []));
  const lookup = results.find((result) => result.toolName === "lookupOrder");
  const refund = results.find((result) => result.toolName === "issueRefund");
  if (!lookup) return { toolCalls: [{ toolName: "lookupOrder", input: { orderId } }] };
  const order = fieldsOf(lookup);
  if (lookup.isError || typeof order["priceCents"] !== "number") {
    return { text: `I could not find order ${orderId}. Could you check the number on your receipt?` };
  }
  if (!refund) {
    return { toolCalls: [{ toolName: "issueRefund", input: { orderId, amountCents: order["priceCents"], reason: "arrived damaged" } }] };
  }
  const outcome = fieldsOf(refund);
  if (refund.isError) {
    const reason = typeof outcome["reason"] === "string" ? outcome["reason"] : "it was not approved";
    return { text: `I'm sorry: I could not refund order ${orderId} (${reason}). A colleague will contact you about a replacement.` };
  }
  const amount = (Number(outcome["amountCents"]) / 100).toFixed(2);
  return {
    text: `I'm sorry your ${String(order["item"])} arrived broken. I've refunded €${amount} to your card (refund ${String(outcome["refundId"])}); it shows up within 3 days.`,
  };
}

function fieldsOf(result: ToolResult): Record<string, Json> {
  const output = result.output;
  return typeof output === "object" && output !== null && !Array.isArray(output) ? output : {};
}
