// Recovery of a row in a state no store writes (docs/decisions/0022), on
// real SQLite files through the public API. The stores write a preparation,
// each barrier and the terminal commit in one transaction each, so a
// durable row is only ever `active` in `calling_llm`, `dispatching_tools`
// or `resuming`, `suspended`, or terminal. A row found in any other state
// (edited by hand, or written by another program) names no continuation:
// recovery reports it `needs_attention` with EXECUTION_REHYDRATION_REQUIRED,
// its status and phase, leaves it untouched for inspection and holds its
// agent; no session starts, so nothing can wait on one that never moves.
//
// The row is a real one — a run suspended for approval, the environment
// closed — moved into each state the retired continuations once served.

import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentBusyError, Phronomy, tool } from "../../host/index.js";
import { recordingLogger, scriptedModel, temporaryStorePath, waitFor } from "./helpers.js";

/** Asks for a refund that needs approval, then answers. Counts its calls. */
function refundAgent(calls: { model: number; refunds: number }) {
  const model = scriptedModel(({ messages }) => {
    calls.model += 1;
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    return turn === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] } : { text: "Done." };
  });
  const refund = tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: () => true,
    execute: ({ orderId }) => {
      calls.refunds += 1;
      return { refunded: orderId };
    },
  });
  return { id: "support", model, tools: { refund } };
}

interface DurableState {
  readonly name: string;
  readonly status: string;
  readonly phase: string;
  readonly metadata?: Record<string, unknown>;
}

/** Each state a retired branch of the core once continued from. */
const UNWRITTEN_STATES: readonly DurableState[] = [
  { name: "a preparing row (preparation recovery)", status: "preparing", phase: "preparing" },
  { name: "recovery_provider_completed (output)", status: "active", phase: "recovery_provider_completed" },
  {
    name: "recovery_provider_completed with framework calls pending (framework_calls)",
    status: "active",
    phase: "recovery_provider_completed",
    metadata: { frameworkCallsPending: true },
  },
  { name: "recovery_tools_completed (followup)", status: "active", phase: "recovery_tools_completed" },
  { name: "recovery_resolved_failed (failed_terminal)", status: "active", phase: "recovery_resolved_failed" },
  { name: "recovery_tools (framework_tools from a recovery phase)", status: "active", phase: "recovery_tools" },
  { name: "recording_tool_results (a phase only a live session holds)", status: "active", phase: "recording_tool_results" },
];

describe("recovery of a row in a state no store writes", () => {
  for (const state of UNWRITTEN_STATES) {
    it(`${state.name}: needs_attention with EXECUTION_REHYDRATION_REQUIRED, the row untouched, the agent held, no session started`, async () => {
      const path = await temporaryStorePath();
      const calls = { model: 0, refunds: 0 };
      const first = await Phronomy.open({ store: path, logger: recordingLogger() });
      const run = first.agent(refundAgent(calls)).start("Refund order 42");
      const executionId = await run.executionId;
      await waitFor(async () => (await first.pendingApprovals()).find((pending) => pending.executionId === executionId));
      await first.close();

      const database = new Database(path);
      const row = database.prepare("SELECT revision, metadata FROM executions WHERE execution_id = ?").get(executionId) as {
        revision: number;
        metadata: string;
      };
      const metadata = JSON.stringify({ ...(JSON.parse(row.metadata) as object), ...state.metadata });
      database
        .prepare("UPDATE executions SET status = ?, phase = ?, metadata = ?, approval_request = 'null' WHERE execution_id = ?")
        .run(state.status, state.phase, metadata, executionId);
      database.close();

      calls.model = 0;
      const second = await Phronomy.open({ store: path, logger: recordingLogger() });
      const agent = second.agent(refundAgent(calls));
      const [report] = await second.recovery("support");
      expect(report).toMatchObject({ executionId, status: "needs_attention", phase: state.phase });
      expect(report?.reason).toMatch(/^EXECUTION_REHYDRATION_REQUIRED: /);
      expect(report?.reason).toContain(`durable status ${state.status}, phase ${state.phase}`);

      // Untouched for inspection: same revision, status, phase and metadata.
      expect(await second.execution(executionId)).toMatchObject({ revision: row.revision, status: state.status, phase: state.phase });
      // Held: the agent admits nothing while the row waits for a person.
      await expect(agent.start("Another question").result).rejects.toBeInstanceOf(AgentBusyError);
      // No session started: the model was not called, no tool ran, and
      // close does not wait for anything.
      await second.close();
      expect(calls).toEqual({ model: 0, refunds: 0 });

      const after = new Database(path, { readonly: true });
      expect(after.prepare("SELECT revision, status, phase, metadata FROM executions WHERE execution_id = ?").get(executionId)).toEqual({
        revision: row.revision,
        status: state.status,
        phase: state.phase,
        metadata,
      });
      after.close();
    });
  }
});
