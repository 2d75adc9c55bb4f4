// Paging, search and counts (host/store/execution-pages.ts, docs/decisions/0082)
// as one suite of a backend, run on SQLite and PostgreSQL
// (`pages-sqlite.test.ts`, `pages-postgres.test.ts`): a cursor walks every
// row once in both directions, filters and words narrow, the search index
// follows writes and deletes, counts cover the whole store, and a bad
// cursor or filter is refused naming its field.

import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../host/errors.js";
import type { ExecutionPage, ExecutionPageQuery, PagingStore } from "../../host/store/execution-pages.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { prepare, providerBarrier, terminalCommit } from "../store/fixtures.js";
import type { Backend } from "./backends.js";

type Store = ExecutionStore & PagingStore;

const inputs = ["Where is order 42?", "Refund the blue sweater", "Cancel my subscription", "Où est ma commande 7?", "Refunds for ORDER 77"];

/** `count` executions e000…, created at 1000, 1010, …, alternately of agents a and b. */
async function filled(backend: Backend, count: number): Promise<Store> {
  const store = (await backend.open()) as Store;
  await store.ensureAgent("a", 1);
  await store.ensureAgent("b", 1);
  await Promise.all(
    Array.from({ length: count }, (_, index) =>
      store.run(prepare(idOf(index), index % 2 === 0 ? "a" : "b", { at: 1_000 + index * 10, input: inputs[index % inputs.length]!, journal: [] })),
    ),
  );
  return store;
}

function idOf(index: number): string {
  return `e${String(index).padStart(3, "0")}`;
}

async function walk(store: Store, query: ExecutionPageQuery, key: "next" | "previous", start?: string): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor = start;
  for (let guard = 0; guard < 100; guard++) {
    const page: ExecutionPage = await store.pageExecutions({ ...query, ...(cursor !== undefined ? { cursor } : {}) });
    pages.push(page.rows.map((row) => row.executionId));
    cursor = page[key];
    if (cursor === undefined) return pages;
  }
  throw new Error("paging did not end");
}

export function definePagesSuite(backend: Backend): void {
  describe(`paging, search and counts (${backend.name})`, () => {
    it("walks every row once, newest first, forward by next and back by previous, with ties on the time broken by id", async () => {
      const store = await filled(backend, 23);
      await store.ensureAgent("c", 1);
      await store.run(prepare("tie-1", "c", { at: 1_050, journal: [] }));
      await store.run(prepare("tie-2", "c", { at: 1_050, journal: [] }));
      const all = (await store.listExecutions({ limit: 100 })).map((row) => row.executionId);
      expect(all).toHaveLength(25);
      const forward = await walk(store, { limit: 4 }, "next");
      expect(forward.map((page) => page.length)).toEqual([4, 4, 4, 4, 4, 4, 1]);
      expect(forward.flat()).toEqual(all);
      // From the last page back to the first by previous.
      const lastPage = await store.pageExecutions({ limit: 4, cursor: (await store.pageExecutions({ limit: 24 })).next! });
      expect(lastPage.rows.map((row) => row.executionId)).toEqual([all[24]]);
      expect(lastPage.next).toBeUndefined();
      const backward = await walk(store, { limit: 4 }, "previous", lastPage.previous);
      expect(backward.flat().length).toBe(24);
      expect(backward.reverse().flat()).toEqual(all.slice(0, 24));
      const first = await store.pageExecutions({ limit: 4 });
      expect(first.previous).toBeUndefined();
    });

    it("narrows by status, outcome, agent, id prefix and time, and pages within the filter", async () => {
      const store = await filled(backend, 12);
      await store.run(providerBarrier(idOf(3), 1));
      await store.run(terminalCommit(idOf(3), 2, { at: 5_000 }));
      await store.run(providerBarrier(idOf(5), 1));
      await store.run(terminalCommit(idOf(5), 2, { outcome: "failed", output: null, error: { code: "MODEL_FAILED", message: "down" }, at: 5_001 }));
      const ids = async (query: ExecutionPageQuery) => (await store.pageExecutions(query)).rows.map((row) => row.executionId);
      expect(await ids({ status: "terminal" })).toEqual([idOf(5), idOf(3)]);
      expect(await ids({ outcome: "failed" })).toEqual([idOf(5)]);
      expect(await ids({ agentId: "b", status: "active" })).toEqual([11, 9, 7, 1].map(idOf));
      expect(await ids({ idPrefix: "e01" })).toEqual([idOf(11), idOf(10)]);
      expect(await ids({ since: 1_020, until: 1_050 })).toEqual([4, 3, 2].map(idOf));
      const filteredPages = await walk(store, { agentId: "a", limit: 2 }, "next");
      expect(filteredPages.flat()).toEqual([10, 8, 6, 4, 2, 0].map(idOf));
    });

    it("searches words of the input and the output: each word a prefix, all required, case folded; the index follows a terminal's output and a purge", async () => {
      const store = await filled(backend, 10);
      const ids = async (text: string) => (await store.pageExecutions({ text })).rows.map((row) => row.executionId);
      expect(await ids("refund")).toEqual([9, 6, 4, 1].map(idOf)); // "Refund", "Refunds"
      expect(await ids("ORDER")).toEqual([9, 5, 4, 0].map(idOf));
      expect(await ids("order 77")).toEqual([9, 4].map(idOf));
      expect(await ids("refunds, order!")).toEqual([9, 4].map(idOf));
      expect(await ids("order 4")).toEqual([5, 0].map(idOf));
      expect(await ids("où commande")).toEqual([8, 3].map(idOf));
      // An output not yet written (JSON null) is not the word "null".
      expect(await ids("null")).toEqual([]);
      expect(await ids("nothing-like-this")).toEqual([]);
      // A page at a time, in both directions (a full page read in time order, the last one by its matches).
      const byOne = await walk(store, { text: "order", limit: 1 }, "next");
      expect(byOne.flat()).toEqual([9, 5, 4, 0].map(idOf));
      const last = await store.pageExecutions({ text: "order", limit: 3, cursor: (await store.pageExecutions({ text: "order", limit: 1 })).next! });
      expect(last.rows.map((row) => row.executionId)).toEqual([5, 4, 0].map(idOf));
      expect((await walk(store, { text: "order", limit: 2 }, "previous", last.previous)).flat()).toEqual([idOf(9)]);
      // A terminal output is searched too.
      await store.run(providerBarrier(idOf(2), 1));
      await store.run(terminalCommit(idOf(2), 2, { output: "Parcel tracking number ZX9981" }));
      expect(await ids("zx998")).toEqual([idOf(2)]);
      expect(await ids("parcel cancel")).toEqual([idOf(2)]);
      // Deleted rows leave the index.
      await store.ensureAgent("gone", 1);
      await store.run(prepare("gone-1", "gone", { input: "unicorn", journal: [] }));
      await store.run(providerBarrier("gone-1", 1));
      await store.run(terminalCommit("gone-1", 2, { output: "unicorn done" }));
      expect(await ids("unicorn")).toEqual(["gone-1"]);
      await store.purgeAgent("gone");
      expect(await ids("unicorn")).toEqual([]);
    });

    it("counts per status and outcome over the whole store, past the newest 1,000 rows, and per agent", async () => {
      const store = await filled(backend, 1_010);
      await store.run(providerBarrier(idOf(0), 1));
      await store.run(terminalCommit(idOf(0), 2));
      const counts = await store.countExecutions();
      expect(counts.total).toBe(1_010);
      expect(counts.byStatus).toMatchObject({ active: 1_009, terminal: 1, completed: 1, queued: 0 });
      expect((await store.countExecutions({ agentId: "a" })).byStatus).toMatchObject({ active: 504, terminal: 1, completed: 1 });
      expect((await store.countExecutions({ agentId: "nobody" })).total).toBe(0);
    }, 60_000);

    it("narrows by the agent definition's name (many conversations of one definition), and pages within it", async () => {
      const store = await filled(backend, 4);
      for (const [index, [agent, definition]] of (
        [
          ["chat-1", "support"],
          ["chat-2", "billing"],
          ["chat-3", "support"],
          ["chat-4", "support"],
        ] as const
      ).entries()) {
        await store.ensureAgent(agent, 1);
        await store.run(prepare(`d${index}`, agent, { at: 2_000 + index, config: { replayable: true, definition }, journal: [] }));
      }
      const ids = async (query: ExecutionPageQuery) => (await store.pageExecutions(query)).rows.map((row) => row.executionId);
      expect(await ids({ definition: "support" })).toEqual(["d3", "d2", "d0"]);
      expect(await ids({ definition: "billing" })).toEqual(["d1"]);
      expect(await ids({ definition: "support", agentId: "chat-3" })).toEqual(["d2"]);
      expect(await ids({ definition: "nobody" })).toEqual([]);
      expect((await walk(store, { definition: "support", limit: 2 }, "next")).flat()).toEqual(["d3", "d2", "d0"]);
    });

    it("keeps its whole-store counts equal to the rows through inserts, status changes, outcomes and purges", async () => {
      const store = await filled(backend, 12);
      await store.run(providerBarrier(idOf(3), 1));
      await store.run(terminalCommit(idOf(3), 2));
      await store.ensureAgent("gone", 1);
      for (const [id, outcome] of [
        ["g1", "completed"],
        ["g2", "failed"],
      ] as const) {
        await store.run(prepare(id, "gone", { journal: [] }));
        await store.run(providerBarrier(id, 1));
        await store.run(terminalCommit(id, 2, outcome === "failed" ? { outcome, output: null, error: { code: "MODEL_FAILED", message: "down" } } : {}));
      }
      expect((await store.countExecutions()).byStatus).toMatchObject({ active: 11, terminal: 3, completed: 2, failed: 1 });
      await store.purgeAgent("gone");
      const counts = await store.countExecutions();
      expect(counts.total).toBe(12);
      expect(counts.byStatus).toMatchObject({ active: 11, terminal: 1, completed: 1, queued: 0 });
      expect(counts.byStatus["failed"] ?? 0).toBe(0);
      expect((await store.countExecutions({ agentId: "gone" })).total).toBe(0);
    });

    it("refuses a bad cursor or filter with InvalidInputError naming the field", async () => {
      const store = await filled(backend, 1);
      const refusal = async (query: unknown) => {
        const error = await store.pageExecutions(query as ExecutionPageQuery).then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(error).toBeInstanceOf(InvalidInputError);
        return (error as InvalidInputError).details?.["field"];
      };
      expect(await refusal({ cursor: "not a cursor!" })).toBe("cursor");
      expect(await refusal({ cursor: Buffer.from('[1,0,"x","e"]').toString("base64url") })).toBe("cursor");
      expect(await refusal({ cursor: Buffer.from('[9,0,1,"e"]').toString("base64url") })).toBe("cursor");
      expect(await refusal({ status: "done" })).toBe("status");
      expect(await refusal({ outcome: "ok" })).toBe("outcome");
      expect(await refusal({ limit: 0 })).toBe("limit");
      expect(await refusal({ limit: 201 })).toBe("limit");
      expect(await refusal({ since: "yesterday" })).toBe("since");
      expect(await refusal({ text: "a b c d e f g h i" })).toBe("text");
      expect(await refusal({ colour: "red" })).toBe("colour");
      expect(await refusal({ definition: "" })).toBe("definition");
      expect(await refusal({ definition: 7 })).toBe("definition");
      await expect(store.countExecutions({ agent: "a" } as never)).rejects.toBeInstanceOf(InvalidInputError);
    });
  });
}
