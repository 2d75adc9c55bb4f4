// A lost lease reaches a conversation at rest (docs/decisions/0092): the
// conversation suspended here keeps no record once at rest, so the store's
// report that its lease moved away (`leasesLost`) must rebuild it to tell
// the core `ConversationOwned(elsewhere)`; the core then hands the kept
// Run of its parked execution to the follower (`FollowAdmitted`), which
// settles it from the row once the approval is decided elsewhere.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConversationPhase } from "../../assembly/abi.js";
import { Phronomy, tool, type ExecutionEvent } from "../../host/index.js";
import { recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";

const leaseMs = 1_000;
const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: () => true, execute: () => "ok" });
const refundModel = () =>
  scriptedModel(({ messages }) => (messages.at(-1)?.role === "tool" ? { text: "refunded" } : { toolCalls: [{ toolName: "refund", input: { amount: 30 } }] }));

describe("a conversation at rest whose lease is lost (PostgreSQL)", () => {
  it("is rebuilt and told owned elsewhere; its kept Run follows the execution and settles once it is decided", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "here" } });
    atEnd(() => environment.close());
    const support = environment.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const approvals: string[] = [];
    const run = support.conversation("c").start("refund me", {
      onEvent: (event: ExecutionEvent) => {
        if (event.type === "approval_required") approvals.push(event.request.approvalId);
      },
    });
    const result = run.result;
    result.catch(() => undefined);
    const executionId = await run.executionId;
    await eventually(
      () => environment.conversations.isResting("c"),
      (resting) => resting,
      "the conversation is at rest",
    );
    // Its agent slot, read from the core without rebuilding the record.
    const agentSlot = environment.core.executionIdentity(environment.coordinator.dormant.slotOf(executionId)!)!.agentSlot;
    expect(environment.core.conversation(agentSlot).phase).toBe(ConversationPhase.Ready);

    // Another process takes the partition: this one loses it at its next tick.
    await withClient((client) =>
      client.query(`UPDATE ${schema}.partitions SET owner = 'elsewhere', epoch = epoch + 1, expires_at = clock_timestamp() + interval '30 seconds'`),
    );
    await eventually(
      () => environment.core.conversation(agentSlot).phase,
      (phase) => phase === ConversationPhase.OwnedElsewhere,
      "the core records the conversation at rest owned elsewhere",
    );

    // Decided by the process that holds it now (another environment on the
    // same schema, as "elsewhere"): the Run kept here follows to its end.
    await withClient((client) => client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp()`));
    const elsewhere = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "elsewhere" } });
    atEnd(() => elsewhere.close());
    const there = elsewhere.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    await eventually(
      async () => (await elsewhere.execution(executionId))?.status,
      (status) => status === "suspended",
      "the execution is there",
    );
    const decided = await eventually(
      () =>
        there
          .conversation("c")
          .resume(executionId, { approvalId: approvals[0]!, approved: true })
          .result.then(
            (value) => value,
            () => undefined,
          ),
      (value) => value !== undefined,
      "the approval is decided elsewhere",
    );
    expect(decided).toMatchObject({ executionId, outcome: "completed", output: "refunded" });
    await expect(result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
  }, 60_000);
});
