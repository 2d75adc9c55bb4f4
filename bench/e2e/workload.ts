// The "agent run" workload of bench/e2e, shared by the SQLite and the
// PostgreSQL measurements and by the PostgreSQL bench's child processes:
// scripted model → instant tool → model → tool → model, durable at every
// step (prepare with the first provider barrier + 4 barriers + terminal =
// 6 store transactions per run, docs/decisions/0014).
//
// One agent admits one execution at a time, so "N in flight" is N agents,
// each starting its next run as soon as the last one ended.

import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { timer, tool, waitForEvent, type Agent, type DefinedAgent, type Environment } from "../../host/index.js";

export const OPERATIONS_PER_RUN = 6;

/** Runs in flight in the concurrent loops (issue 7 names 100). */
export const IN_FLIGHT = 100;

/** Two tool turns then the answer, decided from the conversation alone, so
 * one model instance serves every concurrent execution. */
export function agentRunModel() {
  return scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    return turn < 2 ? { toolCalls: [{ toolName: "lookup", input: { orderId: String(42 + turn) } }] } : { text: "Order 42 has shipped." };
  });
}

export const lookup = tool({ inputSchema: z.object({ orderId: z.string() }), execute: ({ orderId }) => ({ orderId, status: "shipped" }) });

/** Defines the agents (no memory: every run sees only its own
 * conversation, as in the floor) and waits until they are ready. */
export async function defineAgents(env: Environment, agentIds: readonly string[]): Promise<Agent[]> {
  const defined = agentIds.map((id) => env.agent({ id, model: agentRunModel(), tools: { lookup }, memoryWindow: 1 }));
  await Promise.all(defined.map((agent) => agent.ready));
  return defined;
}

/** One run per agent, so each pays its first admission (and, on
 * PostgreSQL, its connection set-up) before the clock starts. */
export async function warmUp(agents: readonly Agent[]): Promise<void> {
  await Promise.all(agents.map((agent) => agent.start("warm up").result));
}

export interface LoopFigures {
  readonly runs: number;
  /** Runs that failed with an error the loop was told to tolerate. */
  readonly lost?: number;
  readonly elapsedMs: number;
  /** Milliseconds per run, in the order they ended. */
  readonly latencies: number[];
}

/** Every agent runs one execution after another for `seconds`; runs that
 * did not complete are an error (the workload never fails). */
export async function runFor(agents: readonly Agent[], seconds: number): Promise<LoopFigures> {
  const latencies: number[] = [];
  let stop = false;
  const worker = async (agent: Agent): Promise<void> => {
    while (!stop) {
      const started = performance.now();
      const result = await agent.start("Where is order 42?").result;
      if (result.outcome !== "completed") throw new Error(`a bench run of agent "${agent.id}" ended ${result.outcome}`);
      latencies.push(performance.now() - started);
    }
  };
  const began = performance.now();
  const running = agents.map(worker);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  stop = true;
  await Promise.all(running);
  return { runs: latencies.length, elapsedMs: performance.now() - began, latencies };
}

export function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

/** runs/s, p50 and p99 of a loop's latencies. */
export function summarize(figures: LoopFigures): { runsPerSecond: number; p50: number; p99: number } {
  const sorted = [...figures.latencies].sort((a, b) => a - b);
  return { runsPerSecond: figures.runs / (figures.elapsedMs / 1000), p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
}

/** A definition whose every run is a new conversation (issue 13: a
 * conversation per run, docs/decisions/0024 and 0030). */
export function defineConversations(env: Environment, name: string): DefinedAgent {
  return env.agent({ name, model: agentRunModel(), tools: { lookup }, memoryWindow: 1 });
}

/** `workers` loops, each starting a run on a NEW conversation as soon as
 * its last one ended, for `seconds`. `accept`: ids this process may run
 * (a process of several runs only the conversations of its partitions, as
 * an application routing by partition would send it). `tolerate`: errors
 * counted as `lost` instead of ending the loop (a partition moved to
 * another process while its run was in flight). */
export async function runConversationsFor(
  definition: DefinedAgent,
  prefix: string,
  workers: number,
  seconds: number,
  accept: (id: string) => boolean = () => true,
  tolerate: (error: unknown) => boolean = () => false,
  observe?: (id: string, moment: "begun" | "ended") => void,
): Promise<LoopFigures> {
  const latencies: number[] = [];
  let stop = false;
  let next = 0;
  let lost = 0;
  const worker = async (): Promise<void> => {
    while (!stop) {
      let id = `${prefix}-${next++}`;
      while (!accept(id)) id = `${prefix}-${next++}`;
      const started = performance.now();
      observe?.(id, "begun");
      let result: Awaited<ReturnType<ReturnType<DefinedAgent["conversation"]>["start"]>["result"]>;
      try {
        result = await definition.conversation(id).start("Where is order 42?").result;
      } catch (error) {
        if (!tolerate(error)) throw error;
        lost += 1;
        continue;
      }
      if (result.outcome !== "completed") throw new Error(`a bench run of conversation "${id}" ended ${result.outcome}`);
      latencies.push(performance.now() - started);
      observe?.(id, "ended");
    }
  };
  const began = performance.now();
  const running = Array.from({ length: workers }, worker);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  stop = true;
  await Promise.all(running);
  return { runs: latencies.length, lost, elapsedMs: performance.now() - began, latencies };
}

/** Asks for a refund, then answers once the refund ran: every start
 * suspends for the refund's approval (the approval benches). */
export function refundModel() {
  return scriptedModel(({ messages }) =>
    messages.at(-1)?.role === "tool" ? { text: "refunded" } : { toolCalls: [{ toolName: "refund", input: { amount: 30 } }] },
  );
}

/** A refund that needs approval before it runs. */
export const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: () => true, execute: () => "ok" });

/** A definition whose conversations each suspend for approval (no memory). */
export function defineRefunds(env: Environment): DefinedAgent {
  return env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
}

/** A timer of an hour: every start suspends on it (decision 0076). */
export const hourTimer = timer({ inputSchema: z.object({ minutes: z.number() }), until: ({ minutes }) => minutes * 60_000 });

/** A definition whose conversations each wait on a timer due in an hour
 * (no memory): the timers bench (`BENCH_TIMERS`). */
export function defineSleepers(env: Environment): DefinedAgent {
  const model = scriptedModel(({ messages }) =>
    messages.at(-1)?.role === "tool" ? { text: "woke up" } : { toolCalls: [{ toolName: "sleep", input: { minutes: 60 } }] },
  );
  return env.agent({ name: "sleepers", model, tools: { sleep: hourTimer }, memoryWindow: 1 });
}

/** A definition whose conversations each wait on a timer due in a day
 * (no memory): the waits section of `npm run bench` (decision 0085). */
export function defineDaySleepers(env: Environment): DefinedAgent {
  const model = scriptedModel(({ messages }) =>
    messages.at(-1)?.role === "tool" ? { text: "woke up" } : { toolCalls: [{ toolName: "sleep", input: { minutes: 24 * 60 } }] },
  );
  return env.agent({ name: "sleepers", model, tools: { sleep: hourTimer }, memoryWindow: 1 });
}

/** The key an order's payment event is signalled with. */
export const paymentKey = (orderId: string): string => `payment:${orderId}`;

/** Waits for the payment of the order the call names (decision 0077). */
export const awaitPayment = waitForEvent({
  inputSchema: z.object({ orderId: z.string() }),
  key: ({ orderId }) => paymentKey(orderId),
  payloadSchema: z.object({ paid: z.boolean() }),
});

/** A definition whose conversations each wait for the payment of the order
 * their first message names (`pay order <id>`), keyed by it (no memory):
 * one key per conversation, signalled by `env.signal(paymentKey(id), …)`. */
export function definePayers(env: Environment): DefinedAgent {
  const model = scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    if (last?.role === "tool") return { text: "paid" };
    const orderId = last?.role === "user" ? last.content.slice("pay order ".length) : "";
    return { toolCalls: [{ toolName: "awaitPayment", input: { orderId } }] };
  });
  return env.agent({ name: "payers", model, tools: { awaitPayment }, memoryWindow: 1 });
}

/** One conversation suspended for approval: what its resume needs. */
export interface SuspendedConversation {
  readonly conversation: Agent;
  readonly executionId: string;
  readonly approvalId: string;
}

/** Starts `count` conversations of `definition` (`user-0`, `user-1`, …) —
 * all at once, or `inFlight` not yet suspended at a time — and settles
 * when every one suspended for approval. `each` hears every suspension:
 * what it needs, the caller keeps (kept here, the handles would count in
 * the memory figures of those that need none). */
export async function suspendConversations(
  definition: DefinedAgent,
  count: number,
  each?: (suspended: SuspendedConversation) => void,
  inFlight = count,
): Promise<void> {
  if (!Number.isInteger(count) || count < 1) throw new Error(`suspendConversations: count must be a positive integer (BENCH_SUSPENDED), got ${count}`);
  let next = 0;
  const suspendNext = () =>
    new Promise<void>((resolve) => {
      const conversation = definition.conversation(`user-${next++}`);
      conversation.start("refund me", {
        onEvent: (event) => {
          if (event.type !== "approval_required") return;
          each?.({ conversation, executionId: event.executionId, approvalId: event.request.approvalId });
          resolve();
        },
      });
    });
  await Promise.all(
    Array.from({ length: Math.min(count, inFlight) }, async () => {
      while (next < count) await suspendNext();
    }),
  );
}
