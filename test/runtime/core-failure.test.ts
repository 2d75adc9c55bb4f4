// A trap inside the control core at run time (an `unreachable`, a failed
// assertion) stops the environment (docs/decisions/0023): every live run's
// waiters fail with CoreFailureError (`CORE_FAILED`), new starts, waits and
// definitions are refused with it, `env.close()` completes, and the store's
// rows are recovered by the next environment opened on it.
//
// The trap is made through the core's export: the test swaps the instance's
// `apply` for one that throws a WebAssembly.RuntimeError — what the engine
// throws on a trap — for the first message of a chosen kind.

import { describe, expect, it } from "vitest";
import { MessageKind as M } from "../../assembly/abi.js";
import type { CoreExports } from "../../host/core/core-exports.js";
import { CoreFailureError, Phronomy, type Environment } from "../../host/index.js";
import {
  agentRunModel,
  approvalRefundTool,
  deferred,
  lookupTool,
  recordingLogger,
  scriptedModel,
  temporaryStorePath,
  turnOf,
  waitFor,
  type RecordedCall,
} from "./helpers.js";

/** What the engine throws on a trap (host/types declares only what the
 * host uses of WebAssembly). */
const WasmRuntimeError = (WebAssembly as unknown as { RuntimeError: ErrorConstructor }).RuntimeError;

/** Makes the core trap on the next message of kind `kind` (any kind when
 * omitted); resolves with the kind that trapped. */
function trapOnNext(environment: Environment, kind?: number): Promise<number> {
  const core = environment.core as unknown as { exports: CoreExports };
  const real = core.exports;
  const trapped = deferred<number>();
  // The instance's exports object is frozen: replace the facade's reference.
  core.exports = {
    ...real,
    memory: real.memory,
    apply(messageKind, a, b, c, d, e, f, g) {
      if (kind === undefined || messageKind === kind) {
        trapped.resolve(messageKind);
        throw new WasmRuntimeError("unreachable");
      }
      return real.apply(messageKind, a, b, c, d, e, f, g);
    },
  };
  return trapped.promise;
}

function defineAgents(environment: Environment, count: number, tool: ReturnType<typeof lookupTool>) {
  return Array.from({ length: count }, (_, index) =>
    environment.agent({
      id: `support-${index}`,
      model: agentRunModel(),
      instructions: "You help customers with their orders.",
      tools: { lookup: tool },
    }),
  );
}

function refundAgent(environment: Environment, refunds: string[]) {
  return environment.agent({
    id: "support",
    model: scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "Your refund of 30 is on its way." },
    ),
    tools: { refund: approvalRefundTool(refunds) },
  });
}

describe("a trap in the control core at run time", () => {
  it("fails every live waiter with CORE_FAILED, refuses what follows, closes, and leaves the executions for the next environment to recover", async () => {
    const store = await temporaryStorePath();
    const logger = recordingLogger();
    const environment = await Phronomy.open({ store, logger });
    const gate = deferred();
    const calls: RecordedCall[] = [];
    const agents = defineAgents(environment, 3, lookupTool({ calls, gate: gate.promise }));
    const runs = agents.map((agent, index) => agent.start(`Where is order ${index}?`));
    const ids = await Promise.all(runs.map((run) => run.executionId));
    // Every run is inside its first tool call (gated) when the core traps.
    await waitFor(async () => (calls.length === 3 ? true : undefined));
    const observers = ids.map((id) => environment.wait(id));
    await waitFor(async () => (environment.coordinator.liveEntries === 3 ? true : undefined));

    const trapped = trapOnNext(environment, M.OperationSettled);
    gate.resolve();
    expect(await trapped).toBe(M.OperationSettled);

    for (const run of [...runs, ...observers]) {
      const error = await run.result.then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(CoreFailureError);
      expect(error).toMatchObject({ code: "CORE_FAILED", details: { messageKind: "OperationSettled", trap: "unreachable" } });
    }
    expect(logger.warnings.filter((line) => line.includes("the control core failed while applying OperationSettled"))).toHaveLength(1);

    // What follows is refused with the same error.
    const later = agents[0]!.start("Anything else?");
    await expect(later.result).rejects.toMatchObject({ code: "CORE_FAILED" });
    await expect(later.executionId).rejects.toMatchObject({ code: "CORE_FAILED" });
    await expect(environment.wait(ids[0]!).result).rejects.toMatchObject({ code: "CORE_FAILED" });
    const another = environment.agent({ id: "another", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(another.start("Hello").result).rejects.toMatchObject({ code: "CORE_FAILED" });
    await environment.close();

    // Nothing durable was touched: the next environment recovers every run.
    const reopened = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      defineAgents(reopened, 3, lookupTool());
      const results = await Promise.all(
        ids.map((id) =>
          reopened.wait(id).result.catch(async (error: unknown) => {
            // Recovered one at a time per agent: wait once recovery installed it.
            if ((error as { code?: string }).code !== "EXECUTION_REHYDRATION_REQUIRED") throw error;
            await reopened.recover();
            return reopened.wait(id).result;
          }),
        ),
      );
      expect(results.map((result) => result.output)).toEqual(ids.map(() => "Order 42 has shipped."));
      const rows = await Promise.all(ids.map((id) => reopened.execution(id)));
      expect(rows.map((row) => `${row?.status}/${row?.outcome}`)).toEqual(ids.map(() => "terminal/completed"));
    } finally {
      await reopened.close();
    }
  });

  it("a decision a visitor filed is not refused by an owner whose core trapped applying it: the next owner applies it", async () => {
    const store = await temporaryStorePath();
    const refunds: string[] = [];
    const owner = await Phronomy.open({ store, logger: recordingLogger() });
    const executionId = await refundAgent(owner, refunds).start("Refund order 42").executionId;
    const [pending] = await waitFor(async () => {
      const approvals = await owner.pendingApprovals();
      return approvals.length > 0 ? approvals : undefined;
    });
    const visitor = await Phronomy.open({ store, visitor: true, logger: recordingLogger() });
    try {
      const trapped = trapOnNext(owner, M.Resume);
      const run = refundAgent(visitor, []).resume(executionId, { approvalId: pending!.request.approvalId, approved: true });
      expect(await run.executionId).toBe(executionId);
      expect(await trapped).toBe(M.Resume);
      await owner.close();
      expect(refunds).toEqual([]);
      // The decision stayed claimed, not refused: the next owner applies it
      // after recovering the suspended execution, and the visitor's run
      // gets the outcome.
      const next = await Phronomy.open({ store, logger: recordingLogger() });
      try {
        refundAgent(next, refunds);
        expect(await run.result).toMatchObject({ executionId, output: "Your refund of 30 is on its way." });
        expect(refunds).toHaveLength(1);
      } finally {
        await next.close();
      }
    } finally {
      await visitor.close();
    }
  });

  it("a trap while a start is being admitted fails that start and every later one; nothing was prepared", async () => {
    const store = await temporaryStorePath();
    const environment = await Phronomy.open({ store, logger: recordingLogger() });
    const [agent] = defineAgents(environment, 1, lookupTool());
    await agent!.ready;
    const trapped = trapOnNext(environment, M.Start);
    const run = agent!.start("Where is my order?");
    expect(await trapped).toBe(M.Start);
    await expect(run.result).rejects.toMatchObject({ code: "CORE_FAILED", details: { messageKind: "Start" } });
    await expect(agent!.start("Again?").result).rejects.toBeInstanceOf(CoreFailureError);
    await environment.close();
    // Nothing was prepared: the store holds no execution.
    const reopened = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      expect(await reopened.executions()).toEqual([]);
    } finally {
      await reopened.close();
    }
  });
});
