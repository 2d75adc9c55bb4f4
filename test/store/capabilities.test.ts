// A store says what it can do (host/store/capabilities.ts): each built-in
// store's declaration matches its methods, `Phronomy.open` refuses a store
// whose declaration promises methods it lacks, and the runtime uses only
// what a store declares.

import { describe, expect, it } from "vitest";
import { InvalidInputError, Phronomy, PhronomyError } from "../../host/index.js";
import { agentRunModel, deferred, lookupTool, waitFor, type RecordedCall } from "../runtime/helpers.js";
import { capabilitiesOf, checkCapabilities, plainStore, type StoreCapabilities } from "../../host/store/capabilities.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { openTemporaryStore, track } from "./fixtures.js";
import { freshSchema, postgresUrl, atEnd } from "../postgres/database.js";
import { PostgresStore } from "../../host/store/postgres-store.js";

/** The store with its declaration replaced, everything else forwarded. */
function declaring(store: ExecutionStore, capabilities: unknown): ExecutionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "capabilities") return capabilities;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function refusal(store: ExecutionStore): Promise<PhronomyError> {
  return Phronomy.open({ store }).then(
    async (env) => {
      await env.close();
      throw new Error("the environment opened");
    },
    (reason: unknown) => reason as PhronomyError,
  );
}

describe("store capabilities", () => {
  it("each built-in store declares exactly what it implements", async () => {
    const owner = await openTemporaryStore();
    const visitor = await SqliteStore.openVisitor(owner.path);
    const schema = await freshSchema();
    const postgres = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => postgres.close());
    try {
      for (const store of [owner, visitor, postgres]) expect(() => checkCapabilities(store)).not.toThrow();
      expect(capabilitiesOf(owner)).toEqual({
        leases: false,
        partitions: false,
        approvalInbox: true,
        startInbox: false,
        queue: true,
        queueReads: true,
        pruning: true,
        schedules: true,
        scheduleReads: true,
        pages: true,
        signals: true,
        dueWaits: true,
      });
      expect(capabilitiesOf(visitor)).toEqual({
        leases: false,
        partitions: false,
        approvalInbox: true,
        startInbox: false,
        queue: false,
        queueReads: true,
        pruning: false,
        pages: true,
        signals: true,
        scheduleReads: true,
        scheduleActions: true,
      });
      expect(capabilitiesOf(postgres)).toEqual({
        leases: true,
        partitions: true,
        approvalInbox: true,
        startInbox: true,
        queue: true,
        queueReads: true,
        pruning: true,
        schedules: true,
        scheduleReads: true,
        pages: true,
        signals: true,
        dueWaits: true,
      });
    } finally {
      await visitor.close();
    }
  });

  it("a store that declares nothing is plain: reads and writes only", async () => {
    const store = track(await openTemporaryStore());
    expect(capabilitiesOf(declaring(store, undefined))).toEqual(plainStore);
  });

  it("Phronomy.open refuses a store declaring capabilities it does not implement, naming each missing method", async () => {
    const store = track(await openTemporaryStore());
    const claimed: StoreCapabilities = { ...plainStore, leases: true, queue: true };
    const error = await refusal(declaring(store, claimed));
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toContain("declares capabilities it does not implement");
    expect(error.message).toContain("leases: acquireLease()");
    expect(error.message).toContain("leases: unfinishedExecutionsOf()");
    expect(error.message).not.toContain("queue:");
    expect(error.details).toEqual({
      missing: [
        "leases: acquireLease()",
        "leases: leaseOf()",
        "leases: heldEpochOf()",
        "leases: leaseHolder()",
        "leases: releaseLease()",
        "leases: unfinishedExecutionsOf()",
      ],
    });
  });

  it("Phronomy.open refuses a declaration that is not an object", async () => {
    const store = track(await openTemporaryStore());
    const error = await refusal(declaring(store, "everything"));
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toMatch(/capabilities must be an object of booleans .* got string/);
  });

  it('the runtime uses only what the store declares: a SQLite store declaring no queue refuses onBusy "enqueue" for a busy conversation', async () => {
    const store = track(await openTemporaryStore());
    const env = await Phronomy.open({ store: declaring(store, { ...plainStore, pruning: true }) });
    try {
      const gate = deferred();
      const calls: RecordedCall[] = [];
      const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls, gate: gate.promise }) } });
      const first = agent.start("Where is order 42?");
      await waitFor(async () => calls.length > 0 || undefined);
      const second = agent.start("And order 43?", { onBusy: "enqueue" });
      const error = await second.result.then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).message).toContain("this store keeps no message queue");
      gate.resolve();
      expect(await first.result).toMatchObject({ outcome: "completed" });
    } finally {
      await env.close();
    }
  });
});
