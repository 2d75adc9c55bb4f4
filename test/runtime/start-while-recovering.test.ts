// A start made while its conversation is being recovered waits for the core
// (docs/decisions/0062, "One way back in"): `Admit` answers `WaitUntilReady`
// while the conversation recovers, the start waits for the core to change
// its phase and asks again — once ready (`OpenAdmissions`) it goes where the
// core says and runs exactly once; held (the recovery failed) it is refused
// AGENT_BUSY held for recovery, as the core answers; the agent closed
// meanwhile, it is refused AGENT_CLOSED at once. Made deterministic by
// holding the store's scan of unfinished executions, which the recovery's
// pass reads after the core ordered it.

import { describe, expect, it } from "vitest";
import { ConversationPhase, RecoveryCause } from "../../assembly/abi.js";
import { AgentBusyError, type Agent, type Environment } from "../../host/index.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { approvalRefundTool, deferred, openEnvironment, scriptedModel, temporaryStorePath, turnOf, waitFor } from "./helpers.js";

/** The store, except that the next scan of unfinished executions asked
 * for after `holdNextScan()` waits until released (or fails). */
function holdingScans(store: ExecutionStore): { store: ExecutionStore; holdNextScan: () => { caught: Promise<void>; release: (error?: Error) => void } } {
  let hold: { caught: () => void; released: Promise<Error | undefined> } | undefined;
  const proxy = new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key === "unfinishedExecutions" && hold !== undefined) {
        const { caught, released } = hold;
        hold = undefined;
        return async () => {
          caught();
          const error = await released;
          if (error !== undefined) throw error;
          return target.unfinishedExecutions();
        };
      }
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  const holdNextScan = () => {
    const caught = deferred();
    const released = deferred<Error | undefined>();
    hold = { caught: caught.resolve, released: released.promise };
    return { caught: caught.promise, release: (error?: Error) => released.resolve(error) };
  };
  return { store: proxy, holdNextScan };
}

/** The core's record of the one conversation live here. */
function conversationRecord(env: Environment) {
  const live = env.core.snapshot().conversations.filter((record) => record.phase !== ConversationPhase.None);
  expect(live).toHaveLength(1);
  return live[0]!;
}

/** A few turns of the loop and the event loop: what would run by now has. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 5; turn += 1) await new Promise((resolve) => setTimeout(resolve, 5));
}

interface Setup {
  readonly env: Environment;
  readonly holdNextScan: () => { caught: Promise<void>; release: (error?: Error) => void };
  readonly agent: Agent;
  /** The user message of each model call, in call order. */
  readonly calls: string[];
  readonly approve: () => Promise<void>;
  readonly suspendedId: string;
}

/** A refund needing approval for "Refund order 42", text otherwise; each
 * call's user message is noted in `calls`. */
function refundModel(calls: string[]) {
  return scriptedModel(({ messages }) => {
    const users = messages.filter((message) => message.role === "user");
    const last = users[users.length - 1]?.content;
    calls.push(typeof last === "string" ? last : JSON.stringify(last));
    if (last === "Refund order 42" && turnOf(messages) === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
    return { text: `done: ${String(last)}` };
  });
}

/** A conversation live here with an execution suspended for approval (it
 * keeps the conversation's entry), on a store whose scan can be held. */
async function suspendedConversation(path?: string): Promise<Setup> {
  const holding = holdingScans(await SqliteStore.open(path ?? (await temporaryStorePath())));
  const env = await openEnvironment({ store: holding.store });
  const calls: string[] = [];
  const agent = env.agent({ id: "support", model: refundModel(calls), tools: { refund: approvalRefundTool([]) } });
  const first = agent.start("Refund order 42");
  const executionId = await first.executionId;
  const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === executionId));
  const approve = async (): Promise<void> => {
    const decided = agent.resume(executionId, { approvalId: pending.request.approvalId, approved: true });
    expect((await decided.result).outcome).toBe("completed");
  };
  return { env, holdNextScan: holding.holdNextScan, agent, calls, approve, suspendedId: executionId };
}

describe("a start while its conversation is recovered", () => {
  it("env.recover(): a start made during the pass waits for the conversation to be ready, then is queued and runs exactly once", async () => {
    const { env, holdNextScan, agent, calls, approve } = await suspendedConversation();
    const scan = holdNextScan();
    const recovered = env.recover();
    await scan.caught;
    const recovering = conversationRecord(env);
    expect(recovering.phase).toBe(ConversationPhase.Recovering);
    expect(recovering.cause).toBe(RecoveryCause.RecoverCalled);

    const during = agent.start("during", { onBusy: "enqueue" });
    let known = false;
    void during.executionId.then(() => {
      known = true;
    });
    await settle();
    // The core answered wait: nothing admitted, nothing queued, the start waits.
    expect(known).toBe(false);
    expect(env.queues.waitingStarts()).toBe(1);
    expect(env.core.conversation(recovering.slot).queued).toBe(0);

    scan.release();
    expect(await recovered).toEqual([]);
    // Ready: asked again, queued behind the suspended execution.
    const executionId = await during.executionId;
    expect(env.queues.waitingStarts()).toBe(0);
    expect(conversationRecord(env).phase).toBe(ConversationPhase.Ready);
    expect(env.core.conversation(recovering.slot).queued).toBe(1);

    await approve();
    const result = await during.result;
    expect(result.executionId).toBe(executionId);
    expect(result.output).toBe("done: during");
    expect(calls.filter((call) => call === "during")).toHaveLength(1);
  });

  it("a recovery that fails holds the conversation: the start waiting on it is refused held for recovery, as the core answers", async () => {
    const { env, holdNextScan, agent, calls, approve } = await suspendedConversation();
    const scan = holdNextScan();
    const recovered = env.recover();
    recovered.catch(() => undefined);
    await scan.caught;
    const during = agent.start("during", { onBusy: "enqueue" });
    during.result.catch(() => undefined);
    await settle();
    expect(env.queues.waitingStarts()).toBe(1);

    scan.release(new Error("the disk went away"));
    await expect(recovered).rejects.toThrow("the disk went away");
    const error = await during.result.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(AgentBusyError);
    expect((error as AgentBusyError).message).toMatch(/recover/);
    expect(env.queues.waitingStarts()).toBe(0);
    expect(conversationRecord(env).phase).toBe(ConversationPhase.Held);

    // env.recover() again (the scan answers): ready, and starts go where the core says.
    expect(await env.recover()).toEqual([]);
    expect(conversationRecord(env).phase).toBe(ConversationPhase.Ready);
    const after = agent.start("after", { onBusy: "enqueue" });
    await after.executionId;
    await approve();
    expect((await after.result).output).toBe("done: after");
    expect(calls.filter((call) => call === "during")).toHaveLength(0);
    expect(calls.filter((call) => call === "after")).toHaveLength(1);
  });

  it("first use: a start made while the conversation's first recovery reads its rows waits for it, then is queued and runs exactly once", async () => {
    const path = await temporaryStorePath();
    const before = await suspendedConversation(path);
    const suspendedId = before.suspendedId;
    await before.env.close();
    // A new environment on the same store: the open scan is held, so the
    // first use of "support" waits for its recovery.
    const holding = holdingScans(await SqliteStore.open(path));
    const scan = holding.holdNextScan();
    const env = await openEnvironment({ store: holding.store });
    const calls: string[] = [];
    const agent = env.agent({ id: "support", model: refundModel(calls), tools: { refund: approvalRefundTool([]) } });
    await scan.caught;
    const during = agent.start("during", { onBusy: "enqueue" });
    let known = false;
    void during.executionId.then(() => {
      known = true;
    });
    await settle();
    expect(known).toBe(false);

    scan.release();
    await during.executionId;
    expect(conversationRecord(env).phase).toBe(ConversationPhase.Ready);
    const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === suspendedId));
    const decided = agent.resume(suspendedId, { approvalId: pending.request.approvalId, approved: true });
    expect((await decided.result).outcome).toBe("completed");
    expect((await during.result).output).toBe("done: during");
    expect(calls.filter((call) => call === "during")).toHaveLength(1);
  });

  it("agent.close() while a start waits: the start asks again at once and is refused AGENT_CLOSED, before the recovery ends", async () => {
    const { env, holdNextScan, agent, calls } = await suspendedConversation();
    const scan = holdNextScan();
    const recovered = env.recover();
    await scan.caught;
    const during = agent.start("during", { onBusy: "enqueue" });
    let outcome: string | undefined;
    void during.result.then(
      () => (outcome = "settled"),
      (error: { code?: string }) => (outcome = error.code),
    );
    await settle();
    expect(env.queues.waitingStarts()).toBe(1);

    await agent.close();
    await settle();
    // The scan is still held: the conversation still recovers, and the
    // start, asked again after the close, was refused by the core.
    expect(outcome).toBe("AGENT_CLOSED");
    expect(env.queues.waitingStarts()).toBe(0);
    expect(conversationRecord(env).phase).toBe(ConversationPhase.Recovering);

    scan.release();
    expect(await recovered).toEqual([]);
    expect(calls.filter((call) => call === "during")).toHaveLength(0);
  });

  it("a start waiting when the environment closes is told RUNTIME_SHUTDOWN, not left waiting", async () => {
    const { env, holdNextScan, agent } = await suspendedConversation();
    const scan = holdNextScan();
    const recovered = env.recover();
    recovered.catch(() => undefined);
    await scan.caught;
    const during = agent.start("during", { onBusy: "enqueue" });
    const outcome = during.result.then(
      () => "settled",
      (error: { code?: string }) => error.code,
    );
    await settle();
    expect(env.queues.waitingStarts()).toBe(1);
    const closed = env.close();
    scan.release();
    await closed;
    expect(await outcome).toBe("RUNTIME_SHUTDOWN");
    expect(env.queues.waitingStarts()).toBe(0);
  });

  it("env.retry() during the pass waits for the conversation to be ready (the core's Admit), then runs its new attempt once", async () => {
    const holding = holdingScans(await SqliteStore.open(await temporaryStorePath()));
    const env = await openEnvironment({ store: holding.store });
    const calls: string[] = [];
    let failing = true;
    const gate = deferred();
    const model = scriptedModel(async ({ messages }) => {
      const last = messages.filter((message) => message.role === "user").at(-1)?.content;
      calls.push(typeof last === "string" ? last : JSON.stringify(last));
      if (!failing) return { text: `done: ${String(last)}` };
      await gate.promise;
      return { error: "the provider is down" };
    });
    const agent = env.agent({ id: "support", model });
    const failed = agent.start("flaky");
    const failedId = await failed.executionId;
    // An agent defined by id keeps its entry while defined: live for env.recover().
    gate.resolve();
    await expect(failed.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    failing = false;
    const before = calls.length;

    const scan = holding.holdNextScan();
    const recovered = env.recover();
    await scan.caught;
    expect(conversationRecord(env).phase).toBe(ConversationPhase.Recovering);
    const retried = env.retry(failedId);
    await settle();
    // The core answered wait: nothing installed, no model call.
    expect(env.queues.waitingStarts()).toBe(1);
    expect(calls.length).toBe(before);
    expect(await env.execution(failedId)).toMatchObject({ status: "terminal", outcome: "failed" });

    scan.release();
    expect(await recovered).toEqual([]);
    await expect(retried.result).resolves.toMatchObject({ executionId: failedId, outcome: "completed", output: "done: flaky" });
    expect(calls.slice(before)).toEqual(["flaky"]);
    expect(env.queues.waitingStarts()).toBe(0);
  });
});
