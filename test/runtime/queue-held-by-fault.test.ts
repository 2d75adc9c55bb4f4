// A conversation's queue behind an execution a store fault held (issue 24
// item 9, docs/decisions/0059): SQLite runs out of disk while the head of a
// conversation runs, with messages queued behind it. The held execution is
// the conversation's until it is recovered: `env.recover()` continues it
// (never `needs_attention` AGENT_BUSY because a queued message took its
// place), and the queued messages run after it, in their order.

import { describe, expect, it } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { type Environment } from "../../host/index.js";
import type { StoreOperation } from "../../host/store/records.js";
import { switchedFaultStore, type FaultSwitch } from "./faulty-store.js";
import { deferred, lookupTool, openEnvironment, temporaryStorePath, turnOf } from "./helpers.js";

const WRITES: readonly StoreOperation["type"][] = ["prepareExecution", "providerBarrier", "toolBarrier", "approvalCommit", "terminalCommit"];
const QUEUED = ["second", "third", "fourth"];

interface Setup {
  readonly env: Environment;
  readonly faults: FaultSwitch;
  /** The user message of each model call, in call order. */
  readonly calls: string[];
  readonly first: { readonly executionId: string; readonly result: Promise<unknown> };
  readonly queued: { readonly executionId: string; readonly result: Promise<unknown> }[];
}

/** The first message runs into the fault with three queued behind it. */
async function heldHeadWithQueue(): Promise<Setup> {
  const faults: FaultSwitch = { operations: new Set(WRITES), fault: "nothing_written", on: false, injected: 0 };
  const env = await openEnvironment({ store: await switchedFaultStore(await temporaryStorePath(), faults) });
  const calls: string[] = [];
  const model = scriptedModel(({ messages }) => {
    const users = messages.filter((message) => message.role === "user");
    const last = users[users.length - 1]?.content;
    calls.push(typeof last === "string" ? last : JSON.stringify(last));
    return turnOf(messages) === 0 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : { text: "Done." };
  });
  const gate = deferred();
  const toolCalled = deferred();
  const lookup = lookupTool({ gate: gate.promise.then(() => undefined) });
  const agent = env.agent({ id: "conversation", model, tools: { lookup }, onBusy: "enqueue" });
  const firstRun = agent.start("first", {
    onEvent: (event) => {
      if (event.type === "tool_call_started") toolCalled.resolve();
    },
  });
  const firstId = await firstRun.executionId;
  await toolCalled.promise;
  const queuedRuns = QUEUED.map((input) => agent.start(input));
  const queued = await Promise.all(
    queuedRuns.map(async (run) => ({
      executionId: await run.executionId,
      result: run.result.catch((error: unknown) => error),
    })),
  );
  // Disk full: the barrier after the tool and the terminal commit fail;
  // the first execution is held for recovery.
  faults.on = true;
  gate.resolve();
  const firstOutcome = await firstRun.result.then(
    () => "completed",
    (error: { code?: string }) => error.code,
  );
  expect(firstOutcome).toBe("EXECUTION_REHYDRATION_REQUIRED");
  expect(faults.injected).toBeGreaterThan(0);
  return { env, faults, calls, first: { executionId: firstId, result: env.wait(firstId).result }, queued };
}

/** The held execution ended completed before any queued message ran, and
 * the queued ones ran in their order. */
async function expectInOrder(setup: Setup): Promise<void> {
  await expect(env(setup).wait(setup.first.executionId).result).resolves.toMatchObject({ outcome: "completed" });
  for (const item of setup.queued) await expect(item.result).resolves.toMatchObject({ outcome: "completed" });
  const firstOfEach = ["first", ...QUEUED].map((input) => setup.calls.indexOf(input));
  const lastOfEach = ["first", ...QUEUED].map((input) => setup.calls.lastIndexOf(input));
  for (let index = 1; index < firstOfEach.length; index += 1) {
    const what = `"${QUEUED[index - 1]}" ran after the message before it ended (model calls: ${setup.calls.join(", ")})`;
    expect(firstOfEach[index], what).toBeGreaterThan(lastOfEach[index - 1]!);
  }
}

const env = (setup: Setup): Environment => setup.env;

describe("a queued message behind an execution a store fault held (SQLite, disk full)", () => {
  it("env.recover() continues the held execution; the queued messages run after it, in order", async () => {
    const setup = await heldHeadWithQueue();
    setup.faults.on = false;
    const report = await setup.env.recover();
    const held = report.find((item) => item.executionId === setup.first.executionId);
    expect(held, JSON.stringify(report)).toMatchObject({ status: "continued" });
    await expectInOrder(setup);
  }, 30_000);
});
