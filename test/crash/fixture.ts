// Shared by the crash child (`child.ts`) and the crash tests: the agent's
// scripted model, the idempotent test tool, the kill-point vocabulary, and
// (for the tests) spawning children and reading what they left behind.
//
// The model is deterministic from the conversation: with `toolTurns` 2 it
// runs model → lookup(42) → model → lookup(43) → model and answers from the
// tool results it was given ("Order 42 has shipped. Order 43 has shipped.").
// Its tool-call ids carry the process id, so a model call repeated in
// another process yields different ids: a recovery that re-called the model
// instead of re-dispatching a durable tool batch would show up as a second
// key for the same logical call.
//
// The tool is an idempotent test tool: every call appends its idempotency
// key to the key log (append + fsync, one JSON line per call) and performs
// its side effect (a line in the effects file, also fsynced) only the first
// time it sees the key — so each key has at most one effect, and the log
// shows every repeat.

import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { scriptedModel, type ScriptedTurn } from "../../host/agent/scripted-model.js";
import type { ConversationMessage, ToolResult } from "../../host/agent/messages.js";
import { tool } from "../../host/index.js";
import type { StoreOperation } from "../../host/store/records.js";
import { childNodeFlags } from "../support/node-flags.js";

// -- the agent --------------------------------------------------------------------

export const AGENT_ID = "support";
export const SINGLE_INPUT = "Where is order 42?";

/** The order ids looked up, one per tool turn. */
export function orderIdOf(turn: number): string {
  return String(42 + turn);
}

/** What the model answers once every lookup of the run succeeded. */
export function expectedAnswer(toolTurns: number): string {
  return Array.from({ length: toolTurns }, (_, turn) => `Order ${orderIdOf(turn)} has shipped.`).join(" ");
}

export function declinedAnswer(reason: string): string {
  return `The lookup was declined: ${reason}.`;
}

/** The agent id of agent `index` of `count`: "support" when alone. */
export function agentIdOf(index: number, count: number): string {
  return count === 1 ? AGENT_ID : `${AGENT_ID}-${index}`;
}

/** A unique input per execution (tool-call ids derive from it). */
export function inputOf(index: number, count: number, run: number, runs: number): string {
  return count === 1 && runs === 1 ? SINGLE_INPUT : `Where are orders 42 and 43? (${agentIdOf(index, count)}, run ${run})`;
}

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 10);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** model → lookup → model → … → answer, from the current execution's part
 * of the conversation (memory of earlier executions comes before its user
 * message and is ignored). */
export function crashModel(toolTurns: number) {
  const nonce = `p${process.pid}`;
  return scriptedModel(({ messages }): ScriptedTurn => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const user = messages[lastUser] as Extract<ConversationMessage, { role: "user" }> | undefined;
    const current = messages.slice(lastUser + 1);
    const results: ToolResult[] = current.flatMap((message) => (message.role === "tool" ? message.results : []));
    const declined = results.find((result) => isRecord(result.output) && result.output["declined"] === true);
    if (declined && isRecord(declined.output)) return { text: declinedAnswer(String(declined.output["reason"])) };
    const turn = current.filter((message) => message.role === "assistant").length;
    if (turn < toolTurns) {
      const callId = `lookup-${turn}-${shortHash(user?.content ?? "")}-${nonce}`;
      return { toolCalls: [{ toolName: "lookup", input: { orderId: orderIdOf(turn) }, callId }] };
    }
    const text = results
      .map((result) =>
        isRecord(result.output) && !result.isError
          ? `Order ${String(result.output["orderId"])} has ${String(result.output["status"])}.`
          : `Lookup ${result.callId} failed: ${JSON.stringify(result.output)}.`,
      )
      .join(" ");
    return { text };
  });
}

// -- the idempotent test tool ------------------------------------------------------------

export interface CrashFiles {
  readonly keyLog: string;
  readonly effects: string;
}

/** One line of the key log: one call of the tool. */
export interface KeyLogEntry {
  readonly key: string;
  readonly executionId: string;
  readonly callId: string;
  readonly orderId: string;
  readonly pid: number;
  /** Whether the effects file did not hold the key yet when called. */
  readonly first: boolean;
}

/** One line of the effects file: one side effect. */
export interface EffectEntry {
  readonly key: string;
  readonly executionId: string;
  readonly orderId: string;
  readonly pid: number;
}

/** Appends one JSON line and fsyncs it before returning. */
export function appendDurably(path: string, value: unknown): void {
  const descriptor = openSync(path, "a");
  try {
    writeSync(descriptor, `${JSON.stringify(value)}\n`);
    fsyncSync(descriptor);
  } finally {
    closeSync(descriptor);
  }
}

export function readJsonLines<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as T);
}

export interface LookupOptions {
  readonly needsApproval?: boolean;
  /** Called after the side effect, before the tool returns (the child
   * kills itself here for `tool:#k`). */
  readonly afterEffect?: () => void;
}

export function idempotentLookup(files: CrashFiles, options: LookupOptions = {}) {
  return tool({
    description: "Looks an order up; idempotent by its idempotency key",
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: options.needsApproval ?? false,
    execute({ orderId }, { idempotencyKey, executionId, callId }) {
      const seen = new Set(readJsonLines<EffectEntry>(files.effects).map((effect) => effect.key));
      const first = !seen.has(idempotencyKey);
      appendDurably(files.keyLog, { key: idempotencyKey, executionId, callId, orderId, pid: process.pid, first } satisfies KeyLogEntry);
      if (first) appendDurably(files.effects, { key: idempotencyKey, executionId, orderId, pid: process.pid } satisfies EffectEntry);
      options.afterEffect?.();
      return { orderId, status: "shipped" };
    },
  });
}

// -- kill points ------------------------------------------------------------------------------

/** `before:<operation>#<n>`, `after:<operation>#<n>`, `tool:#<n>` (inside
 * the n-th tool call, after its side effect) or `point:#<n>` (the n-th kill
 * point of any kind, in the order the child reaches them). */
export type KillSpec = `${"before" | "after"}:${StoreOperation["type"]}#${number}` | `tool:#${number}` | `point:#${number}` | `inflight:#${number}`;

// -- the child's configuration and output ----------------------------------------------------

export interface ChildConfig {
  readonly store: string;
  readonly files: CrashFiles;
  /** Where the child kills itself; none: it runs to the end and exits 0. */
  readonly kill?: KillSpec;
  /** Print every kill point reached (`{ type: "point" }` lines). */
  readonly trace?: boolean;
  /** Lookups before the answer (default 2). */
  readonly toolTurns?: number;
  /** The lookup tool needs approval. */
  readonly approval?: boolean;
  /** `start` (default): start runs; `resume`: decide the pending approval
   * of `resume.executionId`; `recover`: define the agents, let recovery
   * run and wait for every execution it continued; `retry`: retry
   * `retry.executionId` and wait for its outcome. */
  readonly mode?: "start" | "resume" | "recover" | "retry";
  /** Agents run concurrently; each runs `runsPerAgent` executions one
   * after the other (default 1 and 1). */
  readonly agents?: number;
  readonly runsPerAgent?: number;
  readonly resume?: { readonly executionId: string; readonly approved: boolean; readonly reason?: string };
  /** Mode `retry`: `env.retry` of this execution (docs/decisions/0026). */
  readonly retry?: { readonly executionId: string };
  readonly synchronous?: "FULL" | "NORMAL";
  /** Define one agent by name ("support") and use its conversations
   * (`support.conversation(id)`) instead of one agent per id. */
  readonly conversations?: boolean;
}

export type ChildLine =
  | { readonly type: "admitted"; readonly executionId: string; readonly agentId: string }
  | { readonly type: "suspended"; readonly executionId: string; readonly approvalId: string }
  | { readonly type: "settled"; readonly executionId: string; readonly outcome: string; readonly output: unknown }
  | { readonly type: "failed"; readonly executionId: string | null; readonly code: string; readonly message: string }
  | { readonly type: "recovered"; readonly report: readonly { readonly executionId: string; readonly status: string; readonly phase: string }[] }
  | { readonly type: "point"; readonly point: string; readonly index: number; readonly inFlight: number }
  | { readonly type: "killing"; readonly point: string; readonly index: number }
  | { readonly type: "done"; readonly points: number };

// -- spawning children (tests only) ------------------------------------------------------------

const here = dirname(fileURLToPath(import.meta.url));
export const childPath = join(here, "child.ts");
const repositoryRoot = join(here, "..", "..");

export interface ChildOutcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly lines: ChildLine[];
  readonly stderr: string;
  readonly milliseconds: number;
}

const live = new Set<ChildProcess>();

/** A child still running: its lines so far, a wait for a line, its end. */
export interface RunningChild {
  readonly process: ChildProcess;
  readonly lines: ChildLine[];
  /** Resolves with the first line (already printed or to come) that
   * matches; rejects if the child ends first. */
  waitForLine(predicate: (line: ChildLine) => boolean): Promise<ChildLine>;
  readonly ended: Promise<ChildOutcome>;
}

/** Starts the child; a child still running after `timeoutMs` is killed
 * and reported as such. */
export function startChild(config: ChildConfig, timeoutMs = 60_000): RunningChild {
  const started = Date.now();
  const child = spawn(process.execPath, [...childNodeFlags, "--import", "tsx", childPath, JSON.stringify(config)], {
    cwd: repositoryRoot,
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  const lines: ChildLine[] = [];
  const watchers: { predicate: (line: ChildLine) => boolean; resolve: (line: ChildLine) => void }[] = [];
  let partial = "";
  let stderr = "";
  const take = (text: string): void => {
    if (text.trim().length === 0) return;
    let line: ChildLine;
    try {
      line = JSON.parse(text) as ChildLine;
    } catch {
      stderr += `[crash test] the child printed a line that is not JSON: ${text}\n`;
      return;
    }
    lines.push(line);
    for (const watcher of watchers.splice(0)) {
      if (watcher.predicate(line)) watcher.resolve(line);
      else watchers.push(watcher);
    }
  };
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    parts.forEach(take);
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const ended = new Promise<ChildOutcome>((resolve, reject) => {
    const timer = setTimeout(() => {
      stderr += `\n[crash test] child still running after ${timeoutMs} ms: killed by the test\n`;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      live.delete(child);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      take(partial);
      resolve({ code, signal, lines, stderr, milliseconds: Date.now() - started });
    });
  });
  const waitForLine = (predicate: (line: ChildLine) => boolean): Promise<ChildLine> => {
    const found = lines.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      watchers.push({ predicate, resolve });
      ended.then((outcome) => reject(new Error(`the child ended before printing the awaited line\n${describeChild(outcome)}`)), reject);
    });
  };
  return { process: child, lines, waitForLine, ended };
}

/** Runs the child to its end (its own SIGKILL, or exit). */
export function runChild(config: ChildConfig, timeoutMs = 60_000): Promise<ChildOutcome> {
  return startChild(config, timeoutMs).ended;
}

/** For `afterEach`: no child outlives its test. */
export function killLiveChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  live.clear();
}

export function admittedIds(outcome: ChildOutcome): string[] {
  return outcome.lines.flatMap((line) => (line.type === "admitted" ? [line.executionId] : []));
}

export function describeChild(outcome: ChildOutcome): string {
  const lines = outcome.lines.filter((line) => line.type !== "point").map((line) => JSON.stringify(line));
  return (
    `child exit code ${String(outcome.code)}, signal ${String(outcome.signal)}, ${outcome.milliseconds} ms\n`
    + `stdout:\n${lines.join("\n")}\nstderr:\n${outcome.stderr}`
  );
}
