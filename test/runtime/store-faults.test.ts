// Store faults in the middle of real work (issue 11, "after faults, agents
// stay wedged"; docs/decisions/0020). Many agents are in flight — model →
// tool → model runs, some with a failing tool, some cancelled, some
// suspended for approval and decided during the fault — when every
// operation of one kind starts failing (a fault episode), as SQLite fails
// (nothing written: disk full, read-only) or as PostgreSQL can (the
// connection lost after COMMIT, nothing readable until the server is back).
// Then the fault ends and the same environment is asked to go on.
//
// Through the public API only, it checks that every run and every
// `env.wait` settles during the fault; that after `env.recover()` every
// agent accepts a new start that completes; and that nothing admitted is
// lost: each admitted execution has its durable row and ends (or is decided
// and ends) from there.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { tool, type Agent, type Environment, type Run } from "../../host/index.js";
import type { StoreOperation } from "../../host/store/records.js";
import { switchedFaultStore, type FaultSwitch, type SwitchedFault } from "./faulty-store.js";
import { agentRunModel, deferred, openEnvironment, temporaryStorePath, turnOf } from "./helpers.js";

const LOOKUP_AGENTS = 16;
const REFUND_AGENTS = 6;
const LATE_AGENTS = 4;
/** Tool calls started before the fault is switched on. */
const CALLS_BEFORE_FAULT = 6;

function failingLookup() {
  return tool({
    description: "Looks an order up, and fails",
    inputSchema: z.object({ orderId: z.string() }),
    execute: () => {
      throw new Error("the order service is down");
    },
  });
}

const refund = tool({
  description: "Refunds an order",
  inputSchema: z.object({ orderId: z.string() }),
  needsApproval: true,
  execute: ({ orderId }) => ({ refunded: orderId }),
});

const refundModel = scriptedModel(({ messages }) =>
  turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] } : { text: "Refunded." },
);

interface Workload {
  readonly lookups: Agent[];
  readonly refunds: Agent[];
  /** Agents first started during the fault. */
  readonly late: Agent[];
  /** Every run started, with the execution id once admitted. */
  readonly runs: { run: Run; admitted: Promise<string | undefined> }[];
  readonly approvals: Map<string, string>;
}

function track(workload: Workload, run: Run): Run {
  workload.runs.push({
    run,
    admitted: run.executionId.then(
      (id) => id,
      () => undefined,
    ),
  });
  return run;
}

/** Settles `promise` or names what never settled. */
async function settles(promise: Promise<unknown>, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} never settled`)), 20_000);
  });
  try {
    await Promise.race([
      promise.then(
        () => undefined,
        () => undefined,
      ),
      hung,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function runEpisode(operations: readonly StoreOperation["type"][], fault: SwitchedFault): Promise<void> {
  const faults: FaultSwitch = { operations: new Set(operations), fault, on: false, injected: 0 };
  const store = await switchedFaultStore(await temporaryStorePath(), faults);
  const env: Environment = await openEnvironment({ store });
  const toolStarted = { count: 0, reached: deferred() };
  const countingLookup = tool({
    description: "Looks an order up",
    inputSchema: z.object({ orderId: z.string() }),
    execute: ({ orderId }) => {
      if (++toolStarted.count === CALLS_BEFORE_FAULT) toolStarted.reached.resolve();
      return { orderId, status: "shipped" };
    },
  });
  const workload: Workload = { lookups: [], refunds: [], late: [], runs: [], approvals: new Map() };
  for (let index = 0; index < LOOKUP_AGENTS; index += 1) {
    const tools = { lookup: index % 4 === 1 ? failingLookup() : countingLookup };
    workload.lookups.push(env.agent({ id: `lookup-${index}`, model: agentRunModel(), tools }));
  }
  for (let index = 0; index < LATE_AGENTS; index += 1) {
    workload.late.push(env.agent({ id: `late-${index}`, model: agentRunModel(), tools: { lookup: countingLookup } }));
  }
  for (let index = 0; index < REFUND_AGENTS; index += 1) {
    workload.refunds.push(env.agent({ id: `refund-${index}`, model: refundModel, tools: { refund } }));
  }

  // Before the fault: executions suspended for approval.
  const suspended = workload.refunds.map((agent) => {
    const approval = deferred<string>();
    track(
      workload,
      agent.start("Refund order 42", {
        onEvent: (event) => {
          if (event.type === "approval_required") approval.resolve(event.request.approvalId);
        },
      }),
    );
    return approval.promise;
  });
  const suspendedIds = await Promise.all(workload.runs.map((item) => item.admitted));
  const approvalIds = await Promise.all(suspended);
  suspendedIds.forEach((id, index) => workload.approvals.set(id!, approvalIds[index]!));

  // Runs in flight; some cancelled while they work.
  for (const [index, agent] of workload.lookups.entries()) {
    const controller = new AbortController();
    track(workload, agent.start("Where is order 42?", { signal: controller.signal }));
    if (index % 4 === 2) setTimeout(() => controller.abort(), 5 + index);
  }
  await toolStarted.reached.promise;

  // The fault episode: decisions, new starts and waits go on meanwhile.
  faults.on = true;
  const decidedDuringFault = suspendedIds.slice(0, REFUND_AGENTS / 2);
  for (const [index, executionId] of decidedDuringFault.entries()) {
    track(workload, workload.refunds[index]!.resume(executionId!, { approvalId: workload.approvals.get(executionId!)!, approved: true }));
  }
  for (const agent of workload.late) track(workload, agent.start("And order 43?"));
  const admittedIds = (await Promise.all(workload.runs.map((item) => item.admitted))).filter((id): id is string => id !== undefined);
  const waits = admittedIds.map((id) => env.wait(id));

  // Every run and every wait settles, the suspended ones not decided aside
  // (they wait for their decision, by design).
  // Every run and every wait settles, except those of the executions
  // suspended for approval: they wait for the execution's end, by design,
  // and a decision refused during the fault leaves it suspended.
  const suspendedAtStart = new Set(suspendedIds);
  for (const [index, { run }] of workload.runs.entries()) {
    if (index < REFUND_AGENTS) continue;
    await settles(run.result, `run ${index} during the fault`);
  }
  for (const [index, wait] of waits.entries()) {
    if (suspendedAtStart.has(admittedIds[index])) continue;
    await settles(wait.result, `env.wait(${admittedIds[index]}) during the fault`);
  }
  expect(faults.injected).toBeGreaterThan(0);

  // The fault ends; recovery resolves whatever it left held.
  faults.on = false;
  await env.recover();

  // Nothing admitted is lost: every admitted execution has its row, and
  // ends — recovered ones run to their end, suspended ones once decided.
  for (const executionId of admittedIds) expect(await env.execution(executionId), `the row of ${executionId}`).toBeDefined();
  for (const row of await env.executions({ status: "suspended" })) {
    const agent = workload.refunds.find((item) => item.id === row.agentId)!;
    await expect(
      agent.resume(row.executionId, { approvalId: (row.approvalRequest as { approvalId: string }).approvalId, approved: true }).result,
    ).resolves.toMatchObject({ outcome: "completed" });
  }
  for (const executionId of admittedIds) await settles(env.wait(executionId).result, `env.wait(${executionId}) after recovery`);
  for (const [index, { run }] of workload.runs.entries()) await settles(run.result, `run ${index} after recovery`);
  for (const [index, wait] of waits.entries()) await settles(wait.result, `env.wait(${admittedIds[index]}) after recovery`);
  expect((await store.unfinishedExecutions()).map((row) => `${row.executionId} ${row.status} ${row.phase}`)).toEqual([]);

  // Every agent admits again, and the run completes.
  for (const agent of [...workload.lookups, ...workload.late, ...workload.refunds]) {
    const run = agent.start("Anything else?");
    if (workload.refunds.includes(agent)) {
      const executionId = await run.executionId;
      const row = await waitForSuspension(env, executionId);
      await expect(agent.resume(executionId, { approvalId: row, approved: false }).result).resolves.toMatchObject({ outcome: "completed" });
    } else {
      await expect(run.result, `a new start of ${agent.id}`).resolves.toMatchObject({ outcome: "completed" });
    }
  }
}

async function waitForSuspension(env: Environment, executionId: string): Promise<string> {
  for (;;) {
    const row = await env.execution(executionId);
    if (row?.status === "suspended") return (row.approvalRequest as { approvalId: string }).approvalId;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const KINDS: readonly (readonly StoreOperation["type"][])[] = [
  ["prepareExecution"],
  ["providerBarrier"],
  ["toolBarrier"],
  ["approvalCommit"],
  ["terminalCommit"],
  ["prepareExecution", "providerBarrier", "toolBarrier", "approvalCommit", "terminalCommit"],
];

describe("a store fault episode in the middle of work: every run settles, env.recover() releases every agent, nothing admitted is lost", () => {
  for (const fault of ["nothing_written", "outcome_unknown"] as const) {
    for (const operations of KINDS) {
      it(`${fault} on ${operations.length > 1 ? "every operation" : operations[0]}`, async () => {
        await runEpisode(operations, fault);
      }, 60_000);
    }
  }
});
