// The workload every peer of `npm run bench` runs (issue 26 part 4), the
// same as Phronomy's in bench/index.ts: a run is a conversation of five
// durable steps — model → tool → model → tool → model — on an instant
// model and tool; the approval run is model → (suspended for approval) →
// refund tool → model. How each peer makes those steps durable:
// docs/decisions/0069-peers-in-the-benchmark.md.
//
// No peer package is imported here: bench/peers/run.ts loads this file
// before the peers are installed.

import { memoryAfterGc, memoryAtRest } from "../memory.js";

/** Runs in flight in the concurrent loop, and at once in the approval
 * bursts and the restart. */
export const IN_FLIGHT = 100;
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
export const SUSPENDED = Number(process.env.BENCH_SUSPENDED ?? 10_000);
export const CRASH_IN_FLIGHT = 100;
/** Suspends (then resumes) a peer has in flight at once in the approval
 * bursts; Phronomy's child too (decision 0121; `BENCH_APPROVALS=burst`
 * starts all SUSPENDED at once, as its table did before, decision 0069). */
export const APPROVALS_IN_FLIGHT = Number(process.env.BENCH_PEERS_APPROVALS_IN_FLIGHT ?? IN_FLIGHT);
export const CRASH_TOTAL = Number(process.env.BENCH_CRASH_TOTAL ?? 1_000);
/** Runs (IN_FLIGHT at a time) before each measured loop, sequential and
 * in flight, in every process measured — Phronomy's (SQLite and PostgreSQL,
 * bench/index.ts `loop`) and each peer's (`measureLoops`): a process has
 * not compiled its hot path after 100 runs, and its first 2 s window after
 * only 100 paid ≈2–3× the CPU per run of its later ones on PostgreSQL
 * (decision 0124's addendum). BENCH_WARM_UP. */
export const WARM_UP = Number(process.env.BENCH_WARM_UP ?? 1_000);

/** A message of a peer's conversation: plain JSON, what each peer stores. */
export interface Message {
  readonly role: "user" | "assistant" | "tool";
  readonly text?: string;
  readonly toolCalls?: readonly ToolCall[];
  readonly callId?: string;
  readonly output?: unknown;
}

export interface ToolCall {
  readonly callId: string;
  readonly toolName: string;
  readonly input: Record<string, unknown>;
}

/** An instant model shaped like the AI SDK's LanguageModelV3 `doGenerate`
 * (content parts out), scripted from the conversation alone, as
 * `scriptedModel` is for Phronomy (bench/e2e/workload.ts). */
export interface FakeModel {
  doGenerate(options: { prompt: readonly Message[] }): Promise<{
    content: ({ type: "text"; text: string } | { type: "tool-call"; toolCallId: string; toolName: string; input: string })[];
    finishReason: "stop" | "tool-calls";
  }>;
}

function scripted(
  decide: (messages: readonly Message[]) => { toolCalls: { toolName: string; input: Record<string, unknown> }[] } | { text: string },
): FakeModel {
  let calls = 0;
  return {
    doGenerate: async ({ prompt }) => {
      const answer = decide(prompt);
      if ("text" in answer) return { content: [{ type: "text", text: answer.text }], finishReason: "stop" };
      return {
        content: answer.toolCalls.map((call) => ({
          type: "tool-call",
          toolCallId: `call-${++calls}`,
          toolName: call.toolName,
          input: JSON.stringify(call.input),
        })),
        finishReason: "tool-calls",
      };
    },
  };
}

/** Two lookups, then the answer (bench/e2e/workload.ts `agentRunModel`). */
export const agentRunModel = scripted((messages) => {
  const lastUser = messages.map((message) => message.role).lastIndexOf("user");
  const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
  return turn < 2 ? { toolCalls: [{ toolName: "lookup", input: { orderId: String(42 + turn) } }] } : { text: "Order 42 has shipped." };
});

/** A refund, then the answer once it ran (`refundModel`). */
export const refundModel = scripted((messages) =>
  messages.at(-1)?.role === "tool" ? { text: "refunded" } : { toolCalls: [{ toolName: "refund", input: { amount: 30 } }] },
);

/** One model call: the conversation in, the assistant's message out. */
export async function callModel(model: FakeModel, messages: readonly Message[]): Promise<Message> {
  const { content } = await model.doGenerate({ prompt: messages });
  const toolCalls: ToolCall[] = [];
  let text = "";
  for (const part of content) {
    if (part.type === "text") text += part.text;
    else toolCalls.push({ callId: part.toolCallId, toolName: part.toolName, input: JSON.parse(part.input) as Record<string, unknown> });
  }
  return toolCalls.length > 0 ? { role: "assistant", toolCalls } : { role: "assistant", text };
}

/** The instant tool of the agent run. */
export function lookup(input: Record<string, unknown>): unknown {
  return { orderId: input.orderId, status: "shipped" };
}

/** The refund (runs once approved). */
export function refund(): unknown {
  return "ok";
}

export function toolResult(call: ToolCall, output: unknown): Message {
  return { role: "tool", callId: call.callId, output };
}

export const question = (): Message => ({ role: "user", text: "Where is order 42?" });
export const refundRequest = (): Message => ({ role: "user", text: "refund me" });

/** A promise never settled: the tool of a run that is killed inside it. */
export const never = new Promise<never>(() => undefined);

export function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

/** RSS after two full GCs, once the pages they freed were given back
 * (bench/memory.ts: Phronomy's figure is read the same way). */
export function gcRssMb(): number {
  return memoryAfterGc().rss / 2 ** 20;
}

/** `count` calls of `each(index)`, `concurrency` at a time. */
export async function pool(count: number, concurrency: number, each: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(count, concurrency) }, async () => {
      while (next < count) await each(next++);
    }),
  );
}

export interface LoopFigures {
  readonly runsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** Process CPU (user + system, every thread) per run, µs. */
  readonly cpuMicrosPerRun: number;
}

/** `workers` loops, each running a run on a new conversation as soon as its
 * last ended, for SECONDS. */
async function runFor(run: (conversation: string) => Promise<void>, prefix: string, workers: number): Promise<LoopFigures> {
  const latencies: number[] = [];
  let next = 0;
  // The clock, not a timer: a peer whose run never yields to the event
  // loop (LangGraph on better-sqlite3) would never see a timer fire.
  const began = performance.now();
  const end = began + SECONDS * 1000;
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < end) {
        const started = performance.now();
        await run(`${prefix}-${next++}`);
        latencies.push(performance.now() - started);
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  const used = process.cpuUsage(cpu);
  latencies.sort((a, b) => a - b);
  return {
    runsPerSecond: latencies.length / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    cpuMicrosPerRun: (used.user + used.system) / latencies.length,
  };
}

export interface Loops {
  readonly sequential: LoopFigures;
  readonly inFlight: LoopFigures;
}

/** The sequential loop and the IN_FLIGHT-in-flight loop, each on new
 * conversations and each after a warm-up of WARM_UP runs, IN_FLIGHT at a
 * time (Phronomy's loops get the same, bench/index.ts `loop`). */
export async function measureLoops(run: (conversation: string) => Promise<void>): Promise<Loops> {
  await pool(WARM_UP, IN_FLIGHT, (index) => run(`warm-sequential-${index}`));
  const sequential = await runFor(run, "sequential", 1);
  await pool(WARM_UP, IN_FLIGHT, (index) => run(`warm-in-flight-${index}`));
  const inFlight = await runFor(run, "in-flight", IN_FLIGHT);
  return { sequential, inFlight };
}

export interface Approvals {
  readonly suspendsPerSecond: number;
  readonly resumesPerSecond: number;
  /** RSS after GC with SUSPENDED suspended: this process's, and the
   * server's where the peer keeps them in one (Restate). */
  readonly rssSuspended: number;
  readonly rssOpened: number;
  readonly serverRssSuspended?: number;
  /** The same, once the process stayed idle `restMs` (bench/memory.ts):
   * what the burst grew and the runtime gives back when idle, given back. */
  readonly rssAtRest: number;
  readonly serverRssAtRest?: number;
}

/** SUSPENDED conversations suspended for approval (APPROVALS_IN_FLIGHT at a time;
 * `suspend` settles once its conversation is durably waiting), the RSS, then
 * every one approved and run to its end (`resume`, as many at a time). */
export async function measureApprovals(
  suspend: (conversation: string) => Promise<void>,
  resume: (conversation: string) => Promise<void>,
  serverRss?: () => number,
): Promise<Approvals> {
  await suspend("warm");
  await resume("warm");
  const rssOpened = gcRssMb();
  let began = performance.now();
  await pool(SUSPENDED, APPROVALS_IN_FLIGHT, (index) => suspend(`user-${index}`));
  const suspendsPerSecond = SUSPENDED / ((performance.now() - began) / 1000);
  const rssSuspended = gcRssMb();
  const serverRssSuspended = serverRss?.();
  const rssAtRest = (await memoryAtRest()).rss / 2 ** 20;
  const serverRssAtRest = serverRss?.();
  began = performance.now();
  await pool(SUSPENDED, APPROVALS_IN_FLIGHT, (index) => resume(`user-${index}`));
  const resumesPerSecond = SUSPENDED / ((performance.now() - began) / 1000);
  return {
    suspendsPerSecond,
    resumesPerSecond,
    rssSuspended,
    rssOpened,
    rssAtRest,
    ...(serverRssSuspended === undefined ? {} : { serverRssSuspended }),
    ...(serverRssAtRest === undefined ? {} : { serverRssAtRest }),
  };
}

export interface Restart {
  /** From the restarted process's first line (its modules loaded) until
   * CRASH_TOTAL runs are done, the CRASH_IN_FLIGHT recovered among them. */
  readonly seconds: number;
  readonly recoveredSeconds: number;
}

/** The restarted process's part: `recover` settles when the killed
 * process's runs are done; new runs (IN_FLIGHT at a time) until CRASH_TOTAL. */
export async function measureRestart(began: number, recover: () => Promise<void>, run: (conversation: string) => Promise<void>): Promise<Restart> {
  let recoveredDone = began;
  await Promise.all([
    recover().then(() => {
      recoveredDone = performance.now();
    }),
    pool(CRASH_TOTAL - CRASH_IN_FLIGHT, IN_FLIGHT, (index) => run(`after-${index}`)),
  ]);
  return { seconds: (performance.now() - began) / 1000, recoveredSeconds: (recoveredDone - began) / 1000 };
}

/** A child's answer: its last stdout line, JSON. */
export function report(value: unknown): void {
  console.log(JSON.stringify(value));
}
