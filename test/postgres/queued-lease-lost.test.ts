// Messages queued here while the conversation's lease is lost (issue 25,
// docs/decisions/0062, "Owned elsewhere"): the store says the lease moved
// away (`leasesLost`), the runtime tells the core `ConversationOwned
// (elsewhere)`, and the core's `FollowQueued` hands the Run of the message
// queued here to the follower of executions run elsewhere. It runs once,
// and its Run settles once with its real outcome, as does a start made
// while the loss lasts; when this process takes the lease back, the
// conversation leaves "owned elsewhere" and its queue runs here, in order.

import { describe, expect, it } from "vitest";
import { ConversationPhase } from "../../assembly/abi.js";
import { Phronomy, type Environment } from "../../host/index.js";
import { deferred, echoModel, lookupTool, type RecordedCall, recordingLogger } from "../runtime/helpers.js";
import { atEnd, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";

const leaseMs = 1_000;

/** The core's phase and queued count of the conversation live here. */
function coreRecord(environment: Environment, agentId: string): { readonly phase: number; readonly queued: number } | undefined {
  const slot = environment.conversations.slotOf(agentId);
  return slot === undefined ? undefined : environment.core.conversation(slot);
}

/** Settles with how the Run ended, counting every settlement it reports. */
function settlements(run: { readonly result: Promise<{ readonly output?: unknown }> }): { readonly ended: string[] } {
  const ended: string[] = [];
  run.result.then(
    (result) => ended.push(`completed ${String(result.output)}`),
    (error: { code?: string }) => ended.push(error.code ?? "?"),
  );
  return { ended };
}

describe("messages queued while the conversation's lease is lost (PostgreSQL)", () => {
  it("follows them, each once, and runs the queue here again once the lease is taken back", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "here" } });
    atEnd(() => environment.close());
    const gate = deferred();
    const calls: RecordedCall[] = [];
    const support = environment.agent({ name: "support", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ calls, gate: gate.promise }) } });
    const conversation = support.conversation("c");
    const running = conversation.start("m0");
    const runningId = await running.executionId;
    await eventually(
      () => calls.length,
      (count) => count === 1,
      "m0's tool is called",
    );
    const before = conversation.start("m1");
    const beforeId = await before.executionId;
    expect(environment.queues.countDrift()).toEqual([]);

    // Another process takes the partition: this one loses it at its next tick.
    await withClient((client) =>
      client.query(`UPDATE ${schema}.partitions SET owner = 'elsewhere', epoch = epoch + 1, expires_at = clock_timestamp() + interval '2 seconds'`),
    );
    await eventually(
      () => coreRecord(environment, "c")?.phase,
      (phase) => phase === ConversationPhase.OwnedElsewhere,
      "the core records the conversation owned elsewhere",
    );
    expect(coreRecord(environment, "c")?.queued).toBe(1);
    // Started while the lease is lost: filed for the holder the store names
    // (docs/decisions/0031), and claimed here once the lease is back.
    const during = conversation.start("m2");
    const duringId = await during.executionId;
    expect(environment.queues.countDrift()).toEqual([]);
    const followed = [settlements(before), settlements(during)];
    expect(followed.map(({ ended }) => ended)).toEqual([[], []]);

    // m0's write is refused by the fence; the other process's lease
    // expires and this one takes the partition back.
    gate.resolve();
    await expect(running.result).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED" });
    const rows = await eventually(
      async () => Promise.all([runningId, beforeId, duringId].map((id) => environment.execution(id))),
      (found) => found.every((row) => row?.status === "terminal"),
      "every message ran",
    );
    expect(rows.map((row) => [row!.outcome, row!.output])).toEqual([
      ["completed", "echo: m0"],
      ["completed", "echo: m1"],
      ["completed", "echo: m2"],
    ]);
    await expect(before.result).resolves.toMatchObject({ executionId: beforeId, outcome: "completed", output: "echo: m1" });
    await expect(during.result).resolves.toMatchObject({ executionId: duringId, outcome: "completed", output: "echo: m2" });
    expect(followed.map(({ ended }) => ended)).toEqual([["completed echo: m1"], ["completed echo: m2"]]);
    // Each message ran once, in order.
    const journal = await environment.store.readJournal("c", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", "m1", "m2"]);
    for (const id of [beforeId, duringId]) expect(calls.filter((call) => call.idempotencyKey.startsWith(`${id}:`))).toHaveLength(1);
    // Taken back: the conversation left "owned elsewhere", nothing is left queued.
    await eventually(
      () => coreRecord(environment, "c"),
      (record) => record === undefined || (record.phase !== ConversationPhase.OwnedElsewhere && record.queued === 0),
      "the conversation is owned here again with nothing queued",
    );
    expect(environment.queues.countDrift()).toEqual([]);
  }, 60_000);
});
