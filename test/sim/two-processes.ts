// Two (or more) real environments over one simulated cluster store, for
// the simulation's focused regression tests (restored-order, taken-head,
// moved-away):
// each process opens the same "support" agent, and the clock moves on
// with every write committed but the ones a test holds back.

import { afterEach, beforeAll, beforeEach, vi } from "vitest";
import { z } from "zod";
import { loadAiSdk, loadAiSdkInternals } from "../../host/agent/ai-sdk.js";
import { scriptedModel, type ScriptedTurn } from "../../host/agent/scripted-model.js";
import { Phronomy, tool, type Agent, type DefinedAgent, type Environment, type LanguageModel } from "../../host/index.js";
import type { Cluster, ClusterStore, PendingWrite } from "./cluster-store.js";

export const leaseMs = 3_000;

export interface Process {
  readonly store: ClusterStore;
  readonly environment: Environment;
  readonly agent: DefinedAgent;
}

/** A refund (needs approval) for the message "refund order 1", text
 * otherwise. */
function refundOnAsk(): LanguageModel {
  return scriptedModel(({ messages }): ScriptedTurn => {
    const last = messages.filter((message) => message.role === "user").at(-1)?.content;
    const afterTool = messages.at(-1)?.role === "tool";
    return last === "refund order 1" && !afterTool ? { toolCalls: [{ toolName: "refund", input: { orderId: "1" } }] } : { text: `answer to ${String(last)}` };
  });
}

/** A process of the cluster, named `owner`, with the "support" agent and
 * its model (by default: a refund for "refund order 1"); `takeIdleHere`:
 * its store opened with PostgreSQL's option (the cluster's start inbox on). */
export async function open(cluster: Cluster, owner: string, model: LanguageModel = refundOnAsk(), takeIdleHere = false): Promise<Process> {
  const store = cluster.storeFor(owner, takeIdleHere);
  const environment = await Phronomy.open({ store, logger: { warn: () => undefined } });
  const agent = environment.agent({
    name: "support",
    instructions: "You help.",
    model,
    tools: {
      refund: tool({ description: "Refunds an order", inputSchema: z.object({ orderId: z.string() }), needsApproval: true, execute: () => "refunded" }),
    },
  });
  return { store, environment, agent };
}

/** A process of the cluster, named `owner`, with the agent "c" defined by
 * id (one conversation, kept while defined) and its recovery done. */
export async function openById(cluster: Cluster, owner: string, model: LanguageModel): Promise<{ readonly environment: Environment; readonly agent: Agent }> {
  const environment = await Phronomy.open({ store: cluster.storeFor(owner), logger: { warn: () => undefined } });
  const agent = environment.agent({ id: "c", instructions: "You help.", model });
  await environment.recovery("c");
  await vi.advanceTimersByTimeAsync(0);
  return { environment, agent };
}

/** Moves the clock on by `ms`, committing every write `held` does not keep
 * (a killed process's writes never land). */
export async function advance(cluster: Cluster, ms: number, held: (write: PendingWrite) => boolean): Promise<void> {
  const next = (): PendingWrite | undefined => cluster.pending.find((write) => !write.handle.killed && !held(write));
  for (let left = ms; ; left -= 50) {
    for (let write = next(); write !== undefined; write = next()) {
      write.settle("commit");
      await vi.advanceTimersByTimeAsync(0);
    }
    if (left <= 0) return;
    await vi.advanceTimersByTimeAsync(Math.min(50, left));
  }
}

/** Holds no write back. */
export const none = (): boolean => false;

/** The AI SDK loaded once; each test on the fake clock from 2026-01-01. */
export function useSimulatedClock(): void {
  beforeAll(async () => {
    await Promise.all([loadAiSdk(), loadAiSdkInternals()]); // a direct model call needs both (0093)
  });
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date", "performance"] });
    vi.setSystemTime(Date.UTC(2026, 0, 1));
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}
