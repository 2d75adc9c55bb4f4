// Shared fixtures for the runtime tests: real SQLite stores in temporary
// directories, scripted models, and tools that record what they saw.

import type { LanguageModelV4, LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { scriptedModel, type ScriptedModel, type ScriptedTurn } from "../../host/agent/scripted-model.js";
import { Phronomy, tool, type Environment, type OpenOptions } from "../../host/index.js";
import type { Logger } from "../../host/runtime/options.js";
import { StoreError } from "../../host/errors.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { cleanUpAfterEachTest } from "../support/cleanups.js";

const opened: Environment[] = [];
const directories: string[] = [];

cleanUpAfterEachTest(async () => {
  for (const environment of opened.splice(0)) await environment.close().catch(() => undefined);
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

export async function temporaryStorePath(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-runtime-"));
  directories.push(directory);
  return join(directory, "store.db");
}

/** A logger that keeps what it was told, for assertions. */
export function recordingLogger(): Logger & { readonly warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, warn: (message) => warnings.push(message) };
}

export async function openEnvironment(options: Partial<OpenOptions> = {}): Promise<Environment> {
  const environment = await Phronomy.open({ store: await temporaryStorePath(), logger: recordingLogger(), ...options });
  opened.push(environment);
  return environment;
}

/** model → tool → model → tool → model: two lookups, then the answer. */
export function agentRunModel(answer = "Order 42 has shipped.") {
  return scriptedModel(({ messages }) => {
    const turn = turnOf(messages);
    if (turn < 2) return { toolCalls: [{ toolName: "lookup", input: { orderId: `4${turn + 2}` } }] } satisfies ScriptedTurn;
    return { text: answer };
  });
}

/** model → lookup → "echo: <the last user message>" (each message of a
 * conversation answered after one lookup); `{ lookup: false }` answers at
 * once. */
export function echoModel(options: { lookup?: boolean } = {}) {
  const lookup = options.lookup ?? true;
  return scriptedModel(({ messages }) => {
    const lastUser = [...messages].reverse().find((message) => message.role === "user") as { content: string } | undefined;
    if (lookup && turnOf(messages) === 0) return { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } satisfies ScriptedTurn;
    return { text: `echo: ${lastUser?.content ?? ""}` };
  });
}

/** The options of every call a scripted model received, in order. */
export function recordCalls(model: ScriptedModel<LanguageModelV4>): LanguageModelV4CallOptions[] {
  const calls: LanguageModelV4CallOptions[] = [];
  const generate = model.doGenerate.bind(model);
  model.doGenerate = (options) => {
    calls.push(options);
    return generate(options);
  };
  return calls;
}

/** The model turn of the current execution: assistant messages since the
 * last user message (earlier executions' memory comes before it). */
export function turnOf(messages: readonly { role: string }[]): number {
  const lastUser = messages.map((message) => message.role).lastIndexOf("user");
  return messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
}

export interface RecordedCall {
  readonly orderId: string;
  readonly idempotencyKey: string;
}

/** A lookup tool that records every call; `gate` holds it until released. */
export function lookupTool(options: { calls?: RecordedCall[]; gate?: Promise<void>; settled?: number[] } = {}) {
  const calls = options.calls ?? [];
  return tool({
    description: "Looks an order up",
    inputSchema: z.object({ orderId: z.string() }),
    async execute({ orderId }, { idempotencyKey, signal }) {
      calls.push({ orderId, idempotencyKey });
      if (options.gate) {
        await Promise.race([options.gate, new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)))]);
      }
      options.settled?.push(Date.now());
      return { orderId, status: "shipped" };
    },
  });
}

export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export { scriptedModel };

/** A refund tool that always needs approval; records each call's key. */
export function approvalRefundTool(refunds: string[]) {
  return tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
    needsApproval: () => true,
    execute: ({ orderId }, { idempotencyKey }) => {
      refunds.push(idempotencyKey);
      return { refunded: orderId };
    },
  });
}

/** Polls `probe` every 10 ms until it gives a value; fails after `timeoutMs`
 * (20 s by default: a bound on a condition that does come, generous for a
 * machine whose load average is ten times its cores, as CI's can be; a
 * passing test never waits it out). */
export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error("waitFor: timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A real SQLite store whose second preparation fails (nothing written). */
export async function failingSecondPreparation(beforeFailing?: () => void): Promise<ExecutionStore> {
  const store = await SqliteStore.open(await temporaryStorePath());
  let preparations = 0;
  const run = async <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
    if (operation.type === "prepareExecution" && ++preparations === 2) {
      beforeFailing?.();
      throw new StoreError("injected: the connection was lost during prepareExecution; nothing was written");
    }
    return store.run(operation);
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "run") return run;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
}
