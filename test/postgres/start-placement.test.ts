// Where a start runs is the core's verdict (issue 25 item 1,
// docs/decisions/0062, "Placement"): `Admit` answers `FileForOwner` for a
// conversation the core records owned elsewhere, and the host files the
// start through the store's inbox for the process that holds it. A start
// made after the holder let its partition go runs here, once this process
// holds it (the takeover tells the core owned here). And a phase that is
// stale — the core records owned elsewhere while the store names an epoch
// held here — never files a start for this process itself: the host tells
// the core the store's fact, and the start runs here.

import { describe, expect, it } from "vitest";
import { ConversationPhase, MessageKind as M, Ownership } from "../../assembly/abi.js";
import { Phronomy, type Environment } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { scriptedModel, recordingLogger } from "../runtime/helpers.js";
import { atEnd, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";

const leaseMs = 1_000;

/** Answers every message with the process's name and the message; counts the calls. */
function namedModel(name: string, calls: string[]) {
  return scriptedModel(({ messages }) => {
    const lastUser = [...messages].reverse().find((message) => message.role === "user") as { content: string } | undefined;
    calls.push(lastUser?.content ?? "");
    return { text: `${name}: ${lastUser?.content ?? ""}` };
  });
}

async function openAs(url: string, instanceId: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId } });
  atEnd(() => environment.close());
  return environment;
}

/** The core's phase of the conversation live here. */
function phaseOf(environment: Environment, agentId: string): number | undefined {
  const slot = environment.conversations.slotOf(agentId);
  return slot === undefined ? undefined : environment.core.conversation(slot).phase;
}

/** The starts filed in the inbox under this execution id. */
async function filedStarts(schema: string, executionId: string): Promise<number> {
  return withClient(async (client) => {
    const result = await client.query(`SELECT count(*)::int AS n FROM ${schema}.approval_inbox WHERE kind = 'start' AND execution_id = $1`, [executionId]);
    return Number(result.rows[0].n);
  });
}

/** The store, counting the preparations it is asked to run. */
function countingPreparations(store: ExecutionStore): { readonly store: ExecutionStore; readonly prepared: string[] } {
  const prepared: string[] = [];
  const proxy = new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key === "run") {
        return (operation: { readonly type: string; readonly executionId?: string }) => {
          if (operation.type === "prepareExecution") prepared.push(operation.executionId ?? "");
          return target.run(operation as never);
        };
      }
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: proxy, prepared };
}

describe("a start goes where the core's Admit answers (PostgreSQL)", () => {
  it("is filed for the process that holds the conversation and runs once there; after that one let it go, it runs here", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const holder = await openAs(url, "holder");
    const holderCalls: string[] = [];
    const held = holder.agent({ name: "support", model: namedModel("holder", holderCalls) });
    await expect(held.conversation("c").start("m0").result).resolves.toMatchObject({ output: "holder: m0" });

    const other = await openAs(url, "other");
    const otherCalls: string[] = [];
    const support = other.agent({ name: "support", model: namedModel("other", otherCalls) });
    const filed = support.conversation("c").start("m1");
    const filedId = await filed.executionId;
    await expect(filed.result).resolves.toMatchObject({ executionId: filedId, output: "holder: m1" });
    // The core recorded it owned elsewhere (its first use found the lease
    // held) and answered FileForOwner: filed once, run once, at the holder.
    expect(phaseOf(other, "c")).toBe(ConversationPhase.OwnedElsewhere);
    expect(await filedStarts(schema, filedId)).toBe(1);
    expect(holderCalls).toEqual(["m0", "m1"]);
    expect(otherCalls).toEqual([]);

    // The holder goes away: its partition is free, and this process takes
    // it at its next tick (a takeover: the core is told owned here).
    await holder.close();
    const after = support.conversation("c").start("m2");
    await expect(after.result).resolves.toMatchObject({ output: "other: m2" });
    expect(otherCalls).toEqual(["m2"]);
    expect(holderCalls).toEqual(["m0", "m1"]);
    await eventually(
      () => phaseOf(other, "c"),
      (phase) => phase === undefined || phase === ConversationPhase.Ready || phase === ConversationPhase.Releasing,
      "the conversation is owned here",
    );
    const journal = await other.store.readJournal("c", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", "m1", "m2"]);
  }, 60_000);

  it("from a process that takes no share (balance: false), a start for a conversation held elsewhere is refused by the core (it cannot be filed) with the store's lease refusal; nothing is prepared or filed", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const holder = await openAs(url, "holder");
    const held = holder.agent({ name: "support", model: namedModel("holder", []) });
    await expect(held.conversation("c").start("m0").result).resolves.toMatchObject({ output: "holder: m0" });

    const counting = countingPreparations(await PostgresStore.open(url, { instanceId: "command", balance: false }));
    const command = await Phronomy.open({ store: counting.store, logger: recordingLogger() });
    atEnd(() => command.close());
    const calls: string[] = [];
    const support = command.agent({ name: "support", model: namedModel("command", calls) });
    const refused = support.conversation("c").start("m1");
    // The error users got before, when a `Start` went to the store's lease check.
    await expect(refused.result).rejects.toMatchObject({
      code: "AGENT_BUSY",
      agentId: "c",
      details: { reason: "lease_not_held", partition: 0, thisProcess: "command" },
    });
    await expect(refused.executionId).rejects.toMatchObject({ code: "AGENT_BUSY" });
    await expect(refused.result).rejects.toThrow(/^agent "c" is not owned by this process: /);
    expect(phaseOf(command, "c")).toBe(ConversationPhase.OwnedElsewhere);
    // A start whose signal was aborted already is refused cancelled, as before.
    const controller = new AbortController();
    controller.abort();
    await expect(support.conversation("c").start("m2", { signal: controller.signal }).result).rejects.toMatchObject({ code: "CANCELLED" });
    // The core refused it: no preparation reached the store, nothing filed.
    expect(counting.prepared).toEqual([]);
    expect(calls).toEqual([]);
    await withClient(async (client) => {
      const filed = await client.query(`SELECT count(*)::int AS n FROM ${schema}.approval_inbox WHERE kind = 'start'`);
      expect(Number(filed.rows[0].n)).toBe(0);
    });
  }, 60_000);

  it("a stale 'owned elsewhere' (the store holds it here) files nothing: the core is told, and the start runs here", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const environment = await openAs(url, "here");
    const calls: string[] = [];
    // Defined by id: its conversation stays live (pinned) between starts.
    const conversation = environment.agent({ id: "c", model: namedModel("here", calls) });
    await expect(conversation.start("m0").result).resolves.toMatchObject({ output: "here: m0" });
    const entry = environment.coordinator.agentEntries().find((candidate) => candidate.id === "c");
    expect(entry).toBeDefined();
    // The core records the conversation owned elsewhere, though the store
    // names the epoch held here (a takeover not reported yet, made up).
    let started: ReturnType<typeof conversation.start> | undefined;
    await new Promise<void>((resolve) =>
      environment.loop.post(
        () => {
          environment.coordinator.apply(M.ConversationOwned, entry!.slot, entry!.generation, Ownership.Elsewhere);
          expect(environment.core.conversation(entry!.slot).phase).toBe(ConversationPhase.OwnedElsewhere);
          started = conversation.start("m1");
          resolve();
        },
        { label: "a stale phase, for the test" },
      ),
    );
    const id = await started!.executionId;
    await expect(started!.result).resolves.toMatchObject({ executionId: id, output: "here: m1" });
    expect(await filedStarts(schema, id)).toBe(0);
    expect(calls).toEqual(["m0", "m1"]);
    expect(phaseOf(environment, "c")).not.toBe(ConversationPhase.OwnedElsewhere);
  }, 60_000);
});
