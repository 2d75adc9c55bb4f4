// bench/e2e queue: messages to busy conversations (onBusy "enqueue",
// docs/decisions/0025). With each conversation's first run held in its
// tool, QUEUED messages per conversation are sent at once: how fast they
// are queued (each one durable transaction), then — the hold released — how
// fast the queues drain (each queued message a full agent run), against
// the same runs started one after another (a start after each result).
// Prints figures, asserts nothing.
//
//   npm run bench:e2e                       (runs it after the SQLite loops)
//   BENCH_QUEUED=500 npm run bench:e2e

import { join } from "node:path";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Phronomy, tool, type Agent } from "../../host/index.js";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";

const QUEUED = Number(process.env.BENCH_QUEUED ?? 2_000);

function model() {
  return scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    return turn < 2 ? { toolCalls: [{ toolName: "lookup", input: { orderId: String(42 + turn) } }] } : { text: "Order 42 has shipped." };
  });
}

interface QueueFigures {
  readonly queuedPerSecond: number;
  readonly drainedPerSecond: number;
  readonly sequentialPerSecond: number;
}

async function measure(directory: string, synchronous: SynchronousMode, conversations: number): Promise<QueueFigures> {
  const perConversation = Math.max(1, Math.floor(QUEUED / conversations));
  const env = await Phronomy.open({ store: join(directory, `queue-${synchronous}-${conversations}.db`), synchronous, logger: { warn: () => undefined } });
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding = false;
  const lookup = tool({
    inputSchema: z.object({ orderId: z.string() }),
    execute: async ({ orderId }) => {
      if (holding) await held;
      return { orderId, status: "shipped" };
    },
  });
  const agents: Agent[] = Array.from({ length: conversations }, (_, index) =>
    env.agent({
      id: `conversation-${index}`,
      model: model(),
      tools: { lookup },
      memoryWindow: 1,
      onBusy: "enqueue",
      queueLimit: perConversation,
    }),
  );
  await Promise.all(agents.map((agent) => agent.ready));
  // Warm up, then the runs started one after another (a start after each
  // result), then the same number queued at once behind a held run.
  await Promise.all(agents.map((agent) => agent.start("warm up").result));
  const sequentialAt = performance.now();
  await Promise.all(
    agents.map(async (agent) => {
      for (let run = 0; run < perConversation; run += 1) await agent.start("Where is order 42?").result;
    }),
  );
  const sequentialMs = performance.now() - sequentialAt;
  holding = true;
  const first = agents.map((agent) => agent.start("first"));
  await Promise.all(first.map((run) => run.executionId));
  const queuedAt = performance.now();
  const runs = agents.flatMap((agent) => Array.from({ length: perConversation }, () => agent.start("Where is order 42?")));
  await Promise.all(runs.map((run) => run.executionId));
  const queuedMs = performance.now() - queuedAt;
  holding = false;
  const drainAt = performance.now();
  release();
  await Promise.all([...first, ...runs].map((run) => run.result));
  const drainedMs = performance.now() - drainAt;
  await env.close();
  const total = perConversation * conversations;
  return { queuedPerSecond: total / (queuedMs / 1000), drainedPerSecond: total / (drainedMs / 1000), sequentialPerSecond: total / (sequentialMs / 1000) };
}

export async function benchQueue(directory: string): Promise<void> {
  if (!Number.isInteger(QUEUED) || QUEUED < 1) throw new Error(`BENCH_QUEUED must be a positive integer, got ${process.env.BENCH_QUEUED}`);
  console.log(`\nqueued messages (onBusy "enqueue"): ${QUEUED} messages sent at once behind held runs, then drained`);
  for (const synchronous of ["FULL", "NORMAL"] as SynchronousMode[]) {
    for (const conversations of [1, 100]) {
      const figures = await measure(directory, synchronous, conversations);
      console.log(
        `  synchronous=${synchronous}, ${conversations} conversation(s): queued ${figures.queuedPerSecond.toFixed(0)} messages/s; drained ${figures.drainedPerSecond.toFixed(0)} runs/s (${(figures.drainedPerSecond / figures.sequentialPerSecond).toFixed(2)}× the same runs started one after another, ${figures.sequentialPerSecond.toFixed(0)} runs/s)`,
      );
    }
  }
}
