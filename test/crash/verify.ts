// The test side of the crash tests: temporary stores, reopening a store a
// child left behind (with recovery), and the audit of the key log and the
// effects file against the barriers the store recorded.

import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Phronomy, type Agent, type Environment } from "../../host/index.js";
import type { RecoveredExecution } from "../../host/runtime/recovery.js";
import type { Logger } from "../../host/runtime/options.js";
import type { ToolCallRecord } from "../../host/store/records.js";
import { agentIdOf, crashModel, idempotentLookup, killLiveChildren, readJsonLines, type CrashFiles, type EffectEntry, type KeyLogEntry } from "./fixture.js";

const opened: Environment[] = [];
const directories: string[] = [];

/** For `afterEach`: kill children, close environments, remove files. */
export async function cleanUp(): Promise<void> {
  killLiveChildren();
  for (const environment of opened.splice(0)) await environment.close().catch(() => undefined);
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
}

export interface CrashPaths {
  readonly directory: string;
  readonly store: string;
  readonly files: CrashFiles;
}

export async function crashPaths(): Promise<CrashPaths> {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-crash-"));
  directories.push(directory);
  return {
    directory,
    store: join(directory, "store.db"),
    files: { keyLog: join(directory, "keys.jsonl"), effects: join(directory, "effects.jsonl") },
  };
}

export function recordingLogger(): Logger & { readonly warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, warn: (message) => warnings.push(message) };
}

export interface Reopened {
  readonly environment: Environment;
  readonly agents: Agent[];
  /** Each agent's recovery report, in agent order, flattened. */
  readonly report: RecoveredExecution[];
  readonly logger: ReturnType<typeof recordingLogger>;
  /** From `Phronomy.open` until every agent's recovery report was in. */
  readonly recoveryMilliseconds: number;
  readonly openedAt: number;
}

/** Opens the store a child left behind with a fresh environment and
 * defines the same agents: recovery runs on definition. */
export async function reopen(
  paths: CrashPaths,
  options: { toolTurns?: number; approval?: boolean; agents?: number; recover?: boolean; conversations?: boolean } = {},
): Promise<Reopened> {
  const logger = recordingLogger();
  const openedAt = performance.now();
  const environment = await Phronomy.open({ store: paths.store, logger, ...(options.recover !== undefined ? { recover: options.recover } : {}) });
  opened.push(environment);
  const count = options.agents ?? 1;
  const settings = {
    model: crashModel(options.toolTurns ?? 2),
    instructions: "You help customers with their orders.",
    tools: { lookup: idempotentLookup(paths.files, { needsApproval: options.approval ?? false }) },
  };
  if (options.conversations === true) {
    // Defined by name only: recovery finds each conversation's unfinished
    // executions by the definition name stored with them.
    const support = environment.agent({ name: "support", ...settings });
    const report = await support.recovery();
    const agents = Array.from({ length: count }, (_, index) => support.conversation(agentIdOf(index, count)));
    return { environment, agents, report, logger, recoveryMilliseconds: performance.now() - openedAt, openedAt };
  }
  const agents = Array.from({ length: count }, (_, index) => environment.agent({ id: agentIdOf(index, count), ...settings }));
  const reports = await Promise.all(agents.map((agent) => environment.recovery(agent.id)));
  return { environment, agents, report: reports.flat(), logger, recoveryMilliseconds: performance.now() - openedAt, openedAt };
}

/** The idempotency keys each execution's tool barriers wrote, before any
 * call of their batch ran. */
export async function barrierKeys(environment: Environment, executionIds: readonly string[]): Promise<Map<string, Set<string>>> {
  const keys = new Map<string, Set<string>>();
  for (const executionId of executionIds) {
    const set = new Set<string>();
    for (const step of await environment.timeline(executionId)) {
      if (step.kind !== "tool_barrier") continue;
      const calls = (step.payload as { calls?: ToolCallRecord[] } | null)?.calls ?? [];
      for (const call of calls) set.add(call.idempotencyKey);
    }
    keys.set(executionId, set);
  }
  return keys;
}

export interface KeyAudit {
  /** Calls in the key log. */
  readonly calls: number;
  /** Calls beyond the first for their key. */
  readonly repeats: number;
  /** Keys called more than once, with how often. */
  readonly repeatedKeys: Map<string, number>;
  readonly effects: number;
  /** Everything that breaks the at-least-once / same-key contract. */
  readonly problems: string[];
}

/** Audits the key log and the effects file:
 * - every call's key is `executionId:callId`, and was written by a tool
 *   barrier of its execution before the call (when `barriers` is given);
 * - one logical call (execution, order id) is only ever called with one
 *   key — a repeat carries the key of the original;
 * - every key called has exactly one effect, and every effect a call. */
export function auditKeys(files: CrashFiles, barriers?: Map<string, Set<string>>): KeyAudit {
  const log = readJsonLines<KeyLogEntry>(files.keyLog);
  const effects = readJsonLines<EffectEntry>(files.effects);
  const problems: string[] = [];
  const counts = new Map<string, number>();
  const keysOfLogicalCall = new Map<string, Set<string>>();
  for (const entry of log) {
    counts.set(entry.key, (counts.get(entry.key) ?? 0) + 1);
    if (entry.key !== `${entry.executionId}:${entry.callId}`)
      problems.push(`call with key ${entry.key} is not executionId:callId (${entry.executionId}:${entry.callId})`);
    const logical = `${entry.executionId}/order ${entry.orderId}`;
    const keys = keysOfLogicalCall.get(logical) ?? new Set<string>();
    keys.add(entry.key);
    keysOfLogicalCall.set(logical, keys);
    if (barriers) {
      const written = barriers.get(entry.executionId);
      if (!written?.has(entry.key))
        problems.push(`call with key ${entry.key} (pid ${entry.pid}) was not written by a tool barrier of execution ${entry.executionId}`);
    }
  }
  for (const [logical, keys] of keysOfLogicalCall) {
    if (keys.size > 1)
      problems.push(
        `logical call ${logical} was called with ${keys.size} different keys: ${[...keys].join(", ")} (a repeat must carry the key of the original)`,
      );
  }
  const effectCounts = new Map<string, number>();
  for (const effect of effects) effectCounts.set(effect.key, (effectCounts.get(effect.key) ?? 0) + 1);
  for (const [key, count] of effectCounts) {
    if (count !== 1) problems.push(`key ${key} has ${count} effects`);
    if (!counts.has(key)) problems.push(`effect of key ${key} without a call in the key log`);
  }
  for (const key of counts.keys()) {
    if (!effectCounts.has(key)) problems.push(`key ${key} was called but has no effect`);
  }
  const repeatedKeys = new Map([...counts].filter(([, count]) => count > 1));
  const repeats = [...repeatedKeys.values()].reduce((sum, count) => sum + count - 1, 0);
  return { calls: log.length, repeats, repeatedKeys, effects: effects.length, problems };
}

/** Effects per execution id. */
export function effectsByExecution(files: CrashFiles): Map<string, EffectEntry[]> {
  const byExecution = new Map<string, EffectEntry[]>();
  for (const effect of readJsonLines<EffectEntry>(files.effects)) {
    const list = byExecution.get(effect.executionId) ?? [];
    list.push(effect);
    byExecution.set(effect.executionId, list);
  }
  return byExecution;
}

/** Rejects after `milliseconds` with `what` in the message: a test that
 * hangs on a wait says which one. */
export function within<T>(promise: Promise<T>, milliseconds: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${milliseconds} ms: ${what}`)), milliseconds);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A copy of a crashed store and its files (the store, its WAL, the key
 * log, the effects), to crash its recovery in several ways without
 * re-running the first crash. Only copy a store no process has open. */
export async function copyCrashPaths(source: CrashPaths): Promise<CrashPaths> {
  const target = await crashPaths();
  await cp(source.directory, target.directory, { recursive: true });
  return target;
}
