// A preparation that replaces its conversation's memory from an earlier
// execution (`prepareExecution.replaceFrom`, host/store/replace-from.ts,
// docs/decisions/0070), on every backend: SQLite, PostgreSQL and the
// simulated store. The cut and the new execution commit together; a
// refusal writes nothing — no execution, no journal change, no root bump.

import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../host/errors.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { journalEntry, prepare, providerBarrier, terminalCommit } from "../store/fixtures.js";
import { postgresBackend, simulatedBackend, sqliteBackend, type Backend } from "./backends.js";

/** A completed execution whose input and answer are `<id> asks` / `<id> answers`. */
async function completed(store: ExecutionStore, executionId: string, agentId = "support"): Promise<void> {
  await store.run(prepare(executionId, agentId, { journal: [journalEntry(executionId, "user", `${executionId} asks`)] }));
  await store.run(providerBarrier(executionId, 1));
  await store.run(terminalCommit(executionId, 2, { journal: [journalEntry(executionId, "assistant", `${executionId} answers`, 40)] }));
}

/** The journal as `<execution>:<role>` pairs, oldest first. */
async function memory(store: ExecutionStore, agentId = "support"): Promise<string[]> {
  return (await store.readJournal(agentId, 100)).map((record) => `${record.executionId}:${record.role}`);
}

for (const backend of [sqliteBackend, postgresBackend, simulatedBackend] as Backend[]) {
  describe(`store conformance (${backend.name}): prepareExecution with replaceFrom`, () => {
    async function threeTurns(): Promise<ExecutionStore> {
      const store = await backend.open();
      await store.ensureAgent("support", 1);
      for (const id of ["e1", "e2", "e3"]) await completed(store, id);
      return store;
    }

    it("deletes the named execution's records and every later one, then appends the new input, in the preparation's transaction; durable", async () => {
      const store = await threeTurns();
      const prepared = await store.run(
        prepare("e4", "support", { replaceFrom: "e2", firstBarrier: { callId: "call-1" }, journal: [journalEntry("e4", "user", "e4 asks")] }),
      );
      expect(prepared).toMatchObject({ outcome: "active", revision: 1, firstBarrierRevision: 2 });
      const expected = ["e1:user", "e1:assistant", "e4:user"];
      expect(await memory(store)).toEqual(expected);
      // The replaced executions stay in the store: only memory lost them.
      expect((await store.getExecution("e2"))?.status).toBe("terminal");
      expect((await store.getExecution("e3"))?.status).toBe("terminal");
      // The conversation goes on after the cut: the next answer follows the new input.
      await store.run(terminalCommit("e4", 2, { journal: [journalEntry("e4", "assistant", "e4 answers", 40)] }));
      await completed(store, "e5");
      expect(await memory(store)).toEqual([...expected, "e4:assistant", "e5:user", "e5:assistant"]);
      await store.close();
      const reopened = await backend.reopen(store);
      expect(await memory(reopened)).toEqual([...expected, "e4:assistant", "e5:user", "e5:assistant"]);
    });

    it("replacing from the first execution leaves only the new input; without a first barrier too", async () => {
      const store = await threeTurns();
      expect(await store.run(prepare("e4", "support", { replaceFrom: "e1" }))).toMatchObject({ outcome: "active", revision: 1 });
      expect(await memory(store)).toEqual(["e4:user"]);
      expect((await store.readJournal("support", 10))[0]).toEqual(journalEntry("e4", "user", "Where is order 42?"));
    });

    it("refuses, writing nothing: an unknown execution, another conversation's, one not ended, one no longer in memory", async () => {
      const store = await threeTurns();
      await store.ensureAgent("other", 1);
      await completed(store, "o1", "other");
      // Running in this conversation (the store does not admit; the runtime does).
      await store.run(prepare("running", "support", { journal: [journalEntry("running", "user", "running asks")] }));
      // Ended without entering memory: its input was blocked.
      await store.run(prepare("blocked", "support", { journal: [], blockedBy: { code: "INPUT_BLOCKED", message: "no" } }));
      const before = { memory: await memory(store), root: await store.getAgent("support") };
      const cases: [string, Record<string, unknown>][] = [
        ["nobody", { code: "EXECUTION_NOT_FOUND", details: { reason: "replace_unknown", replaceFrom: "nobody" } }],
        ["o1", { code: "INVALID_INPUT", details: { reason: "replace_other_conversation", replaceFrom: "o1" } }],
        ["running", { code: "INVALID_INPUT", details: { reason: "replace_unfinished", replaceFrom: "running" } }],
        ["blocked", { code: "INVALID_INPUT", details: { reason: "replace_not_in_memory", replaceFrom: "blocked" } }],
      ];
      for (const [replaceFrom, error] of cases) {
        const result = await store.run(prepare(`new-${replaceFrom}`, "support", { replaceFrom, firstBarrier: { callId: "call-1" } }));
        expect(result, replaceFrom).toEqual({
          outcome: "not_established",
          error: expect.objectContaining({ ...error, message: expect.stringContaining(replaceFrom) }),
        });
        expect(await store.getExecution(`new-${replaceFrom}`), replaceFrom).toBeUndefined();
      }
      expect({ memory: await memory(store), root: await store.getAgent("support") }).toEqual(before);
      expect(await memory(store, "other")).toEqual(["o1:user", "o1:assistant"]);
    });

    it("a failed execution whose turn was replaced is not reopened for a retry (RETRY_REFUSED, replaced), nothing written", async () => {
      const store = await threeTurns();
      await store.run(prepare("f1", "support", { journal: [journalEntry("f1", "user", "f1 asks")] }));
      await store.run(providerBarrier("f1", 1));
      await store.run(terminalCommit("f1", 2, { outcome: "failed", output: null, error: { code: "MODEL_FAILED", message: "down" }, steps: [], journal: [] }));
      await store.run(prepare("e4", "support", { replaceFrom: "f1" }));
      const before = await store.getExecution("f1");
      await expect(
        store.run({
          type: "reopenExecution",
          executionId: "f1",
          expectedRevision: 3,
          status: "active",
          phase: "calling_llm",
          metadata: { config: {}, attempt: 2 },
          step: { attempt: 2 },
          at: 90,
        }),
      ).rejects.toMatchObject({ code: "RETRY_REFUSED", details: { reason: "replaced" } });
      expect(await store.getExecution("f1")).toEqual(before);
    });

    it("refuses a malformed replaceFrom, and one with a blocked input, synchronously with InvalidInputError", async () => {
      const store = await threeTurns();
      expect(() => store.run(prepare("e4", "support", { replaceFrom: "" }))).toThrow(InvalidInputError);
      expect(() => store.run(prepare("e4", "support", { replaceFrom: "e2", journal: [], blockedBy: { code: "INPUT_BLOCKED", message: "no" } }))).toThrow(
        /replaceFrom cannot go with blockedBy/,
      );
      expect(await memory(store)).toEqual(["e1:user", "e1:assistant", "e2:user", "e2:assistant", "e3:user", "e3:assistant"]);
    });
  });
}
