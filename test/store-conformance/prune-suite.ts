// Pruning (host/store/prune.ts, docs/decisions/0027) as one suite of a
// backend, run on SQLite and PostgreSQL (`prune-sqlite.test.ts`,
// `prune-postgres.test.ts`): exactly the terminal executions finished
// before the cutoff go, with every row that names them; nothing unfinished
// or suspended is touched; the journal keeps its newest records.

import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../host/errors.js";
import { journalRecordsKept, pruneBatchExecutionsMax, type PruneExecutionsOperation, type PruningStore } from "../../host/store/prune.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { approvalCommit, prepare, providerBarrier, suspendForApproval, terminalCommit } from "../store/fixtures.js";
import type { Backend } from "./backends.js";

type Store = ExecutionStore &
  PruningStore & {
    fileDecision(filing: {
      decisionId: string;
      executionId: string;
      agentId: string;
      approvalId: string;
      approved: boolean;
      reason: string | null;
      filedAt: number;
    }): Promise<unknown>;
  };

function prune(store: Store, finishedBefore: number, extra: Partial<PruneExecutionsOperation> = {}) {
  return store.pruneExecutions({ type: "pruneExecutions", finishedBefore, executionsMax: pruneBatchExecutionsMax, ...extra });
}

/** A finished execution: prepared, one barrier, terminal at `finishedAt`. */
async function finished(store: ExecutionStore, executionId: string, finishedAt: number, agentId = "support"): Promise<void> {
  await store.run(prepare(executionId, agentId, { at: finishedAt - 5 }));
  await store.run(providerBarrier(executionId, 1, { at: finishedAt - 4 }));
  await store.run(terminalCommit(executionId, 2, { at: finishedAt }));
}

export function definePruneSuite(backend: Backend): void {
  async function open(): Promise<Store> {
    const store = (await backend.open()) as Store;
    await store.ensureAgent("support", 1);
    await store.ensureAgent("other", 1);
    return store;
  }

  /** Counts of every row naming the execution. */
  async function rowsOf(store: Store, executionId: string): Promise<Record<string, number>> {
    return {
      executions: await backend.countRows(store, "executions", executionId),
      steps: await backend.countRows(store, "steps", executionId),
      approval_inbox: await backend.countRows(store, "approval_inbox", executionId),
      journal: await backend.countRows(store, "journal", executionId),
    };
  }

  describe(`pruning (${backend.name})`, () => {
    it("deletes exactly the terminal executions finished before the cutoff, with their steps and inbox rows; active and suspended ones stay whatever their age", async () => {
      const store = await open();
      // old1: finished at 100 after an approval (an inbox row names it).
      await store.run(prepare("old1", "support", { at: 50 }));
      await store.run(providerBarrier("old1", 1, { at: 51 }));
      await store.run(suspendForApproval("old1", 2, "approval-1", "hash-1", { at: 52 }));
      await store.fileDecision({
        decisionId: randomUUID(),
        executionId: "old1",
        agentId: "support",
        approvalId: "approval-1",
        approved: true,
        reason: null,
        filedAt: 53,
      });
      await store.run(approvalCommit("old1", 3, { at: 60 }));
      await store.run(terminalCommit("old1", 4, { at: 100 }));
      await finished(store, "old2", 150, "other");
      await finished(store, "recent", 200);
      // Unfinished ones, older than everything: never candidates.
      await store.run(prepare("running", "support", { at: 1 }));
      await store.run(providerBarrier("running", 1, { at: 2 }));
      await store.run(prepare("waiting", "other", { at: 3 }));
      await store.run(providerBarrier("waiting", 1, { at: 4 }));
      await store.run(suspendForApproval("waiting", 2, "approval-1", "hash-1", { at: 5 }));
      const before = { running: await rowsOf(store, "running"), waiting: await rowsOf(store, "waiting"), recent: await rowsOf(store, "recent") };
      expect((await rowsOf(store, "old1")).approval_inbox).toBe(1);
      const old1Steps = (await store.listSteps("old1")).length;
      const old2Steps = (await store.listSteps("old2")).length;

      const counts = await prune(store, 180);
      // The journal records of old1/old2 are among their agents' newest records: kept.
      expect(counts).toEqual({ executions: 2, steps: old1Steps + old2Steps, journal: 0, approvals: 1 });
      expect(await store.getExecution("old1")).toBeUndefined();
      expect(await store.getExecution("old2")).toBeUndefined();
      expect(await rowsOf(store, "old1")).toEqual({ executions: 0, steps: 0, approval_inbox: 0, journal: 2 });
      expect(await rowsOf(store, "old2")).toEqual({ executions: 0, steps: 0, approval_inbox: 0, journal: 2 });
      expect({ running: await rowsOf(store, "running"), waiting: await rowsOf(store, "waiting"), recent: await rowsOf(store, "recent") }).toEqual(before);
      expect(await store.getExecution("running")).toMatchObject({ status: "active" });
      expect(await store.getExecution("waiting")).toMatchObject({ status: "suspended" });
      // Nothing left before the cutoff: a second prune removes nothing.
      expect(await prune(store, 180)).toEqual({ executions: 0, steps: 0, journal: 0, approvals: 0 });
      // A cutoff past everything still leaves the unfinished ones.
      expect((await prune(store, 1e12)).executions).toBe(1);
      expect((await store.listExecutions()).map((row) => row.executionId).sort()).toEqual(["running", "waiting"]);
      expect(await store.getAgent("support")).toBeDefined();
    });

    it("prunes one agent's executions, or every agent's but the excepted ones, oldest first and at most executionsMax per call", async () => {
      const store = await open();
      for (let index = 0; index < 5; index += 1) await finished(store, `s${index}`, 100 + index);
      await finished(store, "o1", 100, "other");
      expect(await prune(store, 1_000, { agentId: "other" })).toMatchObject({ executions: 1 });
      await finished(store, "o2", 100, "other");
      expect(await prune(store, 1_000, { exceptAgentIds: ["support"] })).toMatchObject({ executions: 1 });
      expect(await store.getExecution("o2")).toBeUndefined();
      expect(await prune(store, 1_000, { executionsMax: 2 })).toMatchObject({ executions: 2 });
      expect((await store.listExecutions()).map((row) => row.executionId).sort()).toEqual(["s2", "s3", "s4"]);
      expect(await prune(store, 103)).toMatchObject({ executions: 1 });
      expect((await store.listExecutions()).map((row) => row.executionId).sort()).toEqual(["s3", "s4"]);
    });

    it(`keeps each agent's newest ${journalRecordsKept} journal records, and drops older ones once their execution is gone`, async () => {
      const store = await open();
      // Two records per execution (the input, the answer): 10 more than kept.
      const executions = journalRecordsKept / 2 + 5;
      const ids = Array.from({ length: executions }, (_, index) => `c${String(index).padStart(4, "0")}`);
      // One after the other: the journal's order is the commits' order.
      for (const [index, id] of ids.entries()) {
        await store.run(prepare(id, "support", { at: 999 + index }));
        await store.run(terminalCommit(id, 1, { at: 1_000 + index }));
      }
      const newest = await store.readJournal("support", journalRecordsKept);
      expect(newest).toHaveLength(journalRecordsKept);
      expect(newest[0]?.executionId).toBe("c0005");
      // The three oldest executions go: their records are past the newest 1,000.
      expect(await prune(store, 1_003)).toEqual(expect.objectContaining({ executions: 3, journal: 6 }));
      // The next ones' records are older than the newest 1,000 too, but their
      // executions are still in the store: kept with them.
      expect(await backend.countRows(store, "journal", "c0003")).toBe(2);
      expect(await prune(store, 1_006)).toEqual(expect.objectContaining({ executions: 3, journal: 4 }));
      // c0005's records are among the newest 1,000: kept though c0005 is gone.
      expect(await backend.countRows(store, "journal", "c0005")).toBe(2);
      expect(await store.readJournal("support", journalRecordsKept)).toEqual(newest);
    });

    it("keeps fewer journal records when the request says so", async () => {
      const store = await open();
      for (let index = 0; index < 6; index += 1) {
        await store.run(prepare(`k${index}`, "support", { at: 99 + index }));
        await store.run(terminalCommit(`k${index}`, 1, { at: 100 + index }));
      }
      // 12 records; the four newest (k4, k5) stay, the others go with their executions.
      expect(await prune(store, 104, { journalRecordsKept: 4 })).toEqual(expect.objectContaining({ executions: 4, journal: 8 }));
      expect((await store.readJournal("support", 100)).map((record) => record.executionId)).toEqual(["k4", "k4", "k5", "k5"]);
    });

    it("refuses a malformed request at once, naming the field", async () => {
      const store = await open();
      expect(() => prune(store, Number.NaN)).toThrow(InvalidInputError);
      expect(() => prune(store, 1, { executionsMax: 0 })).toThrow(`executionsMax must be an integer from 1 to ${pruneBatchExecutionsMax}`);
      expect(() => prune(store, 1, { executionsMax: pruneBatchExecutionsMax + 1 })).toThrow(/executionsMax/);
      expect(() => prune(store, 1, { agentId: "" })).toThrow(/pruneExecutions.agentId/);
      expect(() => prune(store, 1, { exceptAgentIds: [""] })).toThrow(/exceptAgentIds\[0\]/);
      expect(() => prune(store, 1, { journalRecordsKept: 0 })).toThrow(/journalRecordsKept must be an integer from 1 to 1000/);
    });
  });
}
