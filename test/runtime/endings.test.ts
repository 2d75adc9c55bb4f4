// How executions end when something goes wrong: cancellation and timeouts
// while a tool runs (the terminal waits for it), stale and duplicate
// results injected mid-run, a store operation failing at each barrier,
// backpressure from a tiny offload, and an execution suspended for approval.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CommitOutcome, MessageKind as M, OutcomeType, ResultCode } from "../../assembly/abi.js";
import { CancellationError, OffloadFullError, TimeoutError, tool, type Environment } from "../../host/index.js";
import { agentRunModel, deferred, lookupTool, openEnvironment, scriptedModel, temporaryStorePath, recordingLogger, waitFor } from "./helpers.js";
import { faultyStore, type Fault, type FaultPlan } from "./faulty-store.js";

/** A tool that ignores its abort signal and settles only when released,
 * recording when it did: the terminal must wait for it. */
function stubbornTool(release: Promise<void>, settledAt: number[]) {
  return tool({
    inputSchema: z.object({ orderId: z.string() }),
    async execute() {
      await release;
      settledAt.push(performance.now());
      return "late";
    },
  });
}

async function terminalAt(env: Environment, executionId: string): Promise<number> {
  const steps = await env.timeline(executionId);
  return steps.find((step) => step.kind === "terminal")!.at;
}

describe("cancellation and timeouts", () => {
  it("cancels while a tool runs: terminal cancelled, committed only after the tool settled", async () => {
    const env = await openEnvironment();
    const release = deferred();
    const settledAt: number[] = [];
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: stubbornTool(release.promise, settledAt) } });
    const controller = new AbortController();
    const started = deferred();
    const run = agent.start("Where is order 42?", {
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === "tool_call_started") started.resolve();
      },
    });
    await started.promise;
    controller.abort();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const executionId = await run.executionId;
    expect((await env.execution(executionId))?.status).toBe("active");
    const releasedAt = Date.now();
    release.resolve();
    const failure = await run.result.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CancellationError);
    expect(settledAt).toHaveLength(1);
    expect(await terminalAt(env, executionId)).toBeGreaterThanOrEqual(releasedAt);
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
  });

  it("times out while a tool runs: terminal TIMEOUT after the tool settled; the agent is free again", async () => {
    const env = await openEnvironment();
    const release = deferred();
    const settledAt: number[] = [];
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: stubbornTool(release.promise, settledAt) } });
    const events: string[] = [];
    const run = agent.start("Where is order 42?", { timeoutMs: 150, onEvent: (event) => events.push(event.type) });
    const executionId = await run.executionId;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await env.execution(executionId))?.status).toBe("active");
    release.resolve();
    await expect(run.result).rejects.toBeInstanceOf(TimeoutError);
    expect(events.at(-1)).toBe("timeout");
    expect(await env.execution(executionId)).toMatchObject({ outcome: "failed", error: { code: "TIMEOUT" } });
    await expect(agent.start("again", { timeoutMs: 5_000 }).result).resolves.toBeTruthy();
  });

  it("cancels a start whose signal is already aborted, without admitting it", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "support", model: agentRunModel() });
    await expect(agent.start("hi", { signal: AbortSignal.abort() }).result).rejects.toBeInstanceOf(CancellationError);
    expect(await env.executions()).toEqual([]);
  });
});

describe("stale and duplicate results", () => {
  it("drops a delayed duplicate barrier result and a late terminal result without changing anything", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const injected: number[] = [];
    let executionSlot = -1;
    const run = agent.start("Where is order 42?", {
      onEvent: (event) => {
        if (event.type !== "tool_call_started") return;
        // On the loop, as an offload completion would arrive: the first
        // provider barrier's result again (revision 1 → 2), long after it
        // was applied.
        env.loop.post(() => {
          const entry = env.coordinator.entryById(event.executionId)!;
          executionSlot = entry.slot;
          const { session, revision } = env.core.snapshot().executions[entry.slot]!;
          injected.push(env.coordinator.apply(M.ProviderDispatchReady, entry.slot, entry.generation, session, 1, CommitOutcome.Committed, 2));
          // A result from another session, at the current revision.
          injected.push(
            env.coordinator.apply(M.ToolDispatchReady, entry.slot, entry.generation, session + 7, revision, CommitOutcome.Committed, revision + 1, 1),
          );
        });
      },
    });
    const result = await run.result;
    expect(result.output).toBe("Order 42 has shipped.");
    expect(injected.slice(0, 2)).toEqual([ResultCode.RevisionMustMatch, ResultCode.SessionMustMatch]);
    // The terminal result delivered twice: the slot is released, so the
    // second is refused for its generation.
    const late = await new Promise<number>((resolve) =>
      env.loop.post(() => resolve(env.coordinator.apply(M.TerminalCommitReady, executionSlot, 1, 1, 6, OutcomeType.Completed, 7))),
    );
    expect(late).toBe(ResultCode.ExecutionSlotUnknown);
    expect((await env.execution(result.executionId))?.revision).toBe(7);
  });
});

describe("a store operation failing at each barrier", () => {
  const cases: { plan: FaultPlan; code: string; recovery: boolean }[] = [];
  for (const fault of ["refused", "store_failed"] as Fault[]) {
    // A failed preparation is read back: nothing was written, so the start
    // fails and the agent admits again (docs/decisions/0020).
    cases.push({ plan: { operation: "prepareExecution", occurrence: 1, fault }, code: fault === "refused" ? "OFFLOAD_FULL" : "STORE", recovery: false });
    // The first provider barrier is written with the preparation (decision
    // 0014): the two after the tool batches are operations of their own.
    for (const occurrence of [1, 2])
      cases.push({ plan: { operation: "providerBarrier", occurrence, fault }, code: fault === "refused" ? "OFFLOAD_FULL" : "STORE", recovery: false });
    for (const occurrence of [1, 2])
      cases.push({ plan: { operation: "toolBarrier", occurrence, fault }, code: fault === "refused" ? "OFFLOAD_FULL" : "STORE", recovery: false });
    cases.push({ plan: { operation: "terminalCommit", occurrence: 1, fault }, code: "EXECUTION_REHYDRATION_REQUIRED", recovery: true });
  }
  for (const operation of ["providerBarrier", "toolBarrier", "terminalCommit"] as const) {
    cases.push({ plan: { operation, occurrence: 1, fault: "lost_race" }, code: "EXECUTION_REHYDRATION_REQUIRED", recovery: true });
  }

  for (const { plan, code, recovery } of cases) {
    it(`${plan.fault} on ${plan.operation} #${plan.occurrence}: ${recovery ? "recovery_required" : "the execution fails"} with ${code}, nothing half-written`, async () => {
      const store = await faultyStore(await temporaryStorePath(), plan);
      const logger = recordingLogger();
      const env = await openEnvironment({ store, logger });
      const calls: { orderId: string; idempotencyKey: string }[] = [];
      const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls }) } });
      const run = agent.start("Where is order 42?");
      const failure = await run.result.catch((error: unknown) => error);
      expect(store.injected).toBe(1);
      expect(failure).toMatchObject({ code });
      const rows = await env.executions({ agentId: "support" });
      if (plan.operation === "prepareExecution") {
        // Nothing durable when the prepare never ran; a failed prepare is
        // rolled back whole.
        expect(rows).toEqual([]);
      } else {
        const row = rows[0]!;
        if (recovery) {
          expect(row.status).toBe("active");
          expect(logger.warnings.some((warning) => warning.includes("requires recovery"))).toBe(true);
          expect((await env.executions({ status: "recovery_required" })).map((item) => item.executionId)).toEqual([row.executionId]);
        } else {
          expect(row).toMatchObject({ status: "terminal", outcome: "failed" });
        }
        // Every tool that ran had its barrier durable first.
        const barrierKeys = (await env.timeline(row.executionId)).filter((step) => step.kind === "tool_barrier").length;
        expect(calls.length).toBeLessThanOrEqual(barrierKeys);
      }
      if (recovery) {
        // The admission is held for recovery: the agent refuses new work.
        await expect(agent.start("again").result).rejects.toMatchObject({ code: "AGENT_BUSY" });
        if (plan.operation !== "prepareExecution") {
          // env.recover() releases the held execution in this process and
          // installs it again from its durable row; it finishes from there.
          const executionId = rows[0]!.executionId;
          expect(await env.recover()).toEqual([expect.objectContaining({ executionId, status: "continued" })]);
          await expect(env.wait(executionId).result).resolves.toMatchObject({ outcome: "completed" });
          expect(await env.executions({ status: "recovery_required" })).toEqual([]);
          await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed" });
        }
      } else {
        await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed" });
      }
    });
  }
});

describe("a barrier refused at submission because the execution moved on", () => {
  // The store throws ExecutionRehydrationRequiredError from run() itself:
  // the barrier was never written, so the run ends failed with STORE, and
  // its message says so instead of promising a recovery that is not needed.
  for (const operation of ["providerBarrier", "toolBarrier"] as const) {
    it(`on ${operation}: the run ends failed with STORE, saying the barrier could not be written and the step did not run`, async () => {
      const store = await faultyStore(await temporaryStorePath(), { operation, occurrence: 1, fault: "refused_lost_race" });
      const env = await openEnvironment({ store });
      const calls: { orderId: string; idempotencyKey: string }[] = [];
      const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls }) } });
      const failure = await agent.start("Where is order 42?").result.catch((error: unknown) => error);
      expect(store.injected).toBe(1);
      const what = operation === "providerBarrier" ? "model call" : "tool batch";
      expect(failure).toMatchObject({ code: "STORE" });
      const message = (failure as Error).message;
      expect(message).toContain(`the barrier before the ${what}`);
      expect(message).toContain("could not be written");
      expect(message).toContain(`the ${what} did not run and the execution ended failed`);
      expect(message).not.toContain("env.recover()");
      expect(message).not.toContain("left untouched");
      const [row] = await env.executions({ agentId: "support" });
      expect(row).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "STORE", message } });
      if (operation === "toolBarrier") expect(calls).toEqual([]);
      await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed" });
    });
  }
});

describe("backpressure", () => {
  it("refuses the excess with OffloadFullError at a tiny capacity; every accepted run finishes", async () => {
    const env = await openEnvironment({ offloadCapacity: 2, offloadPolicy: "worker" });
    const agents = [];
    for (let index = 0; index < 12; index += 1) {
      const agent = env.agent({ id: `agent-${index}`, model: agentRunModel(), tools: { lookup: lookupTool() } });
      await agent.ready;
      agents.push(agent);
    }
    const outcomes = await Promise.allSettled(agents.map((agent) => agent.start("Where is order 42?").result));
    const refused = outcomes.filter((outcome) => outcome.status === "rejected");
    const completed = outcomes.filter((outcome) => outcome.status === "fulfilled");
    expect(refused.length).toBeGreaterThan(0);
    for (const outcome of refused) expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(OffloadFullError);
    expect(completed.length).toBeGreaterThan(0);
    // Nothing stuck: every agent admits again.
    for (const agent of agents) await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed" });
  });
});

describe("suspended for approval", () => {
  it("commits the suspended outcome, fires approval_required and the approval listener, keeps the result pending", async () => {
    const env = await openEnvironment();
    const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: true, execute: () => "refunded" });
    const agent = env.agent({ id: "support", model: scriptedModel([{ toolCalls: [{ toolName: "refund", input: { amount: 30 } }] }]), tools: { refund } });
    const approvals: unknown[] = [];
    const events: string[] = [];
    const run = agent.start("refund me", {
      onEvent: (event) => events.push(event.type),
      approvalListener: (request) => {
        approvals.push(request);
      },
    });
    const executionId = await run.executionId;
    // Under load the suspension's commit can take longer than any fixed pause.
    await waitFor(async () => (approvals.length > 0 && events.includes("approval_required") ? true : undefined));
    expect(events).toContain("approval_required");
    expect(approvals).toEqual([
      expect.objectContaining({ executionId, agentId: "support", toolCalls: [expect.objectContaining({ toolName: "refund", input: { amount: 30 } })] }),
    ]);
    const row = await env.execution(executionId);
    expect(row).toMatchObject({ status: "suspended", phase: "suspended", outcome: "suspended" });
    expect(row?.approvalRequest).toMatchObject({ executionId, toolCalls: [{ toolName: "refund" }] });
    let settled = false;
    run.result.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBe(false);
    await expect(agent.start("another").result).rejects.toMatchObject({ code: "AGENT_BUSY" });
    // Closing settles the local waiter; the execution stays durable.
    await env.close();
    await expect(run.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
  });
});
