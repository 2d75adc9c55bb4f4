// A decision filed while a takeover's recovery runs (docs/decisions/0062,
// "The approval inbox's readiness"): the core closes the conversation's
// inbox when the lease changes hands (`CloseInbox`) and opens it when the
// takeover's recovery ends (`OpenInbox`, claimed at once). A decision
// applied before would be judged on what was installed before the lease
// moved; it stays filed until the suspended execution is installed again,
// then it is claimed and applied once.

import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ConversationFlag, ConversationPhase } from "../../assembly/abi.js";
import { Phronomy, type Environment } from "../../host/index.js";
import type { InboxStore } from "../../host/runtime/approval-inbox.js";
import { approvalRefundTool, deferred, recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";

const leaseMs = 1_000;

/** Asks approval for one refund, then answers. */
function refundModel() {
  return scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    if (turn === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
    return { text: "Refunded." };
  });
}

/** The core's record of the conversation live here. */
function coreRecord(environment: Environment, agentId: string): { readonly phase: number; readonly flags: number } | undefined {
  const slot = environment.conversations.slotOf(agentId);
  return slot === undefined ? undefined : environment.core.conversation(slot);
}

/** Holds every read of unfinished rows (the takeover's pass) until `release`. */
function holdRecoveryReads(environment: Environment): { readonly release: () => void } {
  const gate = deferred();
  const store = environment.store as unknown as Record<"unfinishedExecutions" | "unfinishedExecutionsOf", (...args: unknown[]) => Promise<unknown>>;
  for (const name of ["unfinishedExecutions", "unfinishedExecutionsOf"] as const) {
    const read = store[name].bind(store);
    store[name] = async (...args) => {
      const rows = await read(...args);
      await gate.promise;
      return rows;
    };
  }
  return { release: () => gate.resolve() };
}

async function inboxStates(schema: string): Promise<string[]> {
  const { rows } = await withClient((client) => client.query<{ state: string }>(`SELECT state FROM ${schema}.approval_inbox`));
  return rows.map((row) => row.state);
}

describe("a decision filed during a takeover's recovery (PostgreSQL)", () => {
  it("stays filed while the recovery runs, and is claimed and applied once it ends", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "here" } });
    atEnd(() => environment.close());
    const refunds: string[] = [];
    const billing = environment.agent({ id: "billing", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    const original = billing.start("Refund order 42");
    const executionId = await original.executionId;
    const pending = await eventually(
      async () => (await environment.pendingApprovals()).find((item) => item.executionId === executionId),
      (found) => found !== undefined,
      "the execution waits for an approval",
    );
    expect((coreRecord(environment, "billing")!.flags & ConversationFlag.InboxOpen) !== 0).toBe(true);

    // Another process takes the partition; when its lease expires this one
    // takes it back, and that takeover's recovery is held.
    const held = holdRecoveryReads(environment);
    await withClient((client) =>
      client.query(`UPDATE ${schema}.partitions SET owner = 'elsewhere', epoch = epoch + 1, expires_at = clock_timestamp() + interval '2 seconds'`),
    );
    await eventually(
      () => coreRecord(environment, "billing")?.phase,
      (phase) => phase === ConversationPhase.OwnedElsewhere,
      "the core records the conversation owned elsewhere",
    );
    await eventually(
      () => coreRecord(environment, "billing")?.phase,
      (phase) => phase === ConversationPhase.Recovering,
      "the takeover's recovery runs",
    );
    expect((coreRecord(environment, "billing")!.flags & ConversationFlag.InboxOpen) !== 0).toBe(false);

    // Filed now: notified, and polled by the lease tick, yet not claimed.
    const inbox = environment.store as unknown as InboxStore;
    await inbox.fileDecision({
      decisionId: randomUUID(),
      executionId,
      agentId: "billing",
      approvalId: pending!.request.approvalId,
      approved: true,
      reason: null,
      filedAt: Date.now(),
    });
    await new Promise((resolve) => setTimeout(resolve, 2 * leaseMs));
    expect(coreRecord(environment, "billing")?.phase).toBe(ConversationPhase.Recovering);
    expect(await inboxStates(schema)).toEqual(["filed"]);
    expect(refunds).toEqual([]);

    // The recovery ends: the inbox opens and the decision is applied, once.
    held.release();
    await eventually(
      () => inboxStates(schema),
      (states) => states[0] === "applied",
      "the decision is applied",
    );
    const row = await eventually(
      () => environment.execution(executionId),
      (found) => found?.status === "terminal",
      "the execution ends",
    );
    expect(row).toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  }, 60_000);
});
