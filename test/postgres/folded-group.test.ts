// The group commit folds its members that are one function call each into
// one statement per run of consecutive calls (docs/decisions/0130): the
// calls run in the group's order, each sees what the calls before it
// wrote, every member gets its own answer, and a group of preparations,
// barriers and terminal commits writes the rows it wrote when each was a
// statement of its own.

import { describe, expect, it } from "vitest";
import { foldedGroup } from "../../host/store/postgres/group-commit.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import type { StoreOperation } from "../../host/store/records.js";
import { prepare, providerBarrier, terminalCommit, toolBarrier } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

async function open(schema: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(`${postgresUrl}?schema=${schema}`);
  atEnd(() => store.close());
  return store;
}

describe("folded group commit (PostgreSQL)", () => {
  it("folds each run of consecutive calls into one statement; other members stay statements of their own, in order", () => {
    const folded = foldedGroup([
      { sql: "SELECT f(1) AS applied", call: "f(1)" },
      { sql: "SELECT f(2) AS applied", call: "f(2)" },
      { sql: "WITH x AS (SELECT f(3) AS applied) SELECT applied FROM x", call: undefined },
      { sql: "SELECT f(4) AS applied", call: "f(4)" },
      { sql: "SELECT CASE WHEN true THEN f(5) END AS applied FROM g()", call: undefined },
      { sql: "SELECT f(6) AS applied", call: "f(6)" },
      { sql: "SELECT f(7) AS applied", call: "f(7)" },
      { sql: "SELECT f(8) AS applied", call: "f(8)" },
    ]);
    expect(folded.text.split(";\n")).toEqual([
      "SELECT ARRAY[f(1),\nf(2)]::integer[] AS applied",
      "WITH x AS (SELECT f(3) AS applied) SELECT applied FROM x",
      "SELECT f(4) AS applied",
      "SELECT CASE WHEN true THEN f(5) END AS applied FROM g()",
      "SELECT ARRAY[f(6),\nf(7),\nf(8)]::integer[] AS applied",
    ]);
    expect(folded.sent).toBe(5);
    expect(folded.answers).toEqual([
      { statement: 0, element: 0 },
      { statement: 0, element: 1 },
      { statement: 1, element: undefined },
      { statement: 2, element: undefined },
      { statement: 3, element: undefined },
      { statement: 4, element: 0 },
      { statement: 4, element: 1 },
      { statement: 4, element: 2 },
    ]);
    expect(foldedGroup([{ sql: "SELECT f(1) AS applied", call: "f(1)" }])).toEqual({
      text: "SELECT f(1) AS applied",
      answers: [{ statement: 0, element: undefined }],
      sent: 1,
    });
  });

  it("the folded calls run in the group's order, each seeing the writes of the calls before it, each answered its own", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await withClient((client) =>
      client.query(`
        CREATE TABLE ${schema}.calls (position serial PRIMARY KEY, tag integer NOT NULL, seen integer NOT NULL);
        CREATE FUNCTION ${schema}.called(p_tag integer) RETURNS integer LANGUAGE plpgsql AS $$
        DECLARE
          before integer;
        BEGIN
          SELECT count(*) INTO before FROM ${schema}.calls;
          INSERT INTO ${schema}.calls (tag, seen) VALUES (p_tag, before);
          RETURN p_tag * 10 + before;
        END $$`),
    );
    const before = { ...store.groups.figures };
    // Submitted in one turn, out of order: the group runs them by `order`;
    // the member without a call splits the calls into two runs.
    const tags = [5, 2, 8, 1, 7, 3, 6, 4];
    const answers = await Promise.all(
      tags.map((tag) =>
        tag === 6
          ? store.groups.submit(`SELECT ${schema}.called(${tag}) AS applied FROM (SELECT 1) AS one`, tag)
          : store.groups.submit(`SELECT ${schema}.called(${tag}) AS applied`, tag, `${schema}.called(${tag})`),
      ),
    );
    expect(store.groups.figures.groups - before.groups).toBe(1);
    expect(store.groups.figures.statements - before.statements).toBe(8);
    expect(store.groups.figures.sent - before.sent).toBe(3);
    // Called in the order 1..8; each saw the rows of the calls before it.
    expect(answers).toEqual(tags.map((tag) => tag * 10 + (tag - 1)));
    const rows = await withClient(async (client) => (await client.query(`SELECT tag, seen FROM ${schema}.calls ORDER BY position`)).rows);
    expect(rows).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((tag) => ({ tag, seen: tag - 1 })));
  });

  it("a group of preparations, barriers and terminal commits (refusals among them) writes the rows each alone wrote", async () => {
    // The same operations in two fresh schemas: one after another (each its
    // own group, its own statement), then all in one turn (folded).
    const written = async (together: boolean) => {
      const schema = freshSchema();
      const store = await open(schema);
      for (let index = 0; index < 12; index += 1) await store.ensureAgent(`a${index}`, 1);
      // e3..e11 prepared, then e6..e11 past their first barrier.
      for (let index = 3; index < 12; index += 1) await store.run(prepare(`e${index}`, `a${index}`));
      for (let index = 6; index < 12; index += 1) await store.run(providerBarrier(`e${index}`, 1));
      // Moved on behind the store's back: its writes below are sent, and refused by the database.
      await withClient((client) => client.query(`UPDATE ${schema}.executions SET revision = revision + 1 WHERE execution_id IN ('e5', 'e8')`));
      const operations: StoreOperation[] = [
        prepare("e0", "a0"),
        prepare("e1", "a1", { blockedBy: { code: "INPUT_BLOCKED", message: "no" } }),
        prepare("e2", "a2", { firstBarrier: { callId: "model-1" } }),
        providerBarrier("e3", 1),
        toolBarrier("e4", 1),
        providerBarrier("e5", 1), // refused: the row is at revision 2
        terminalCommit("e6", 2),
        terminalCommit("e7", 2, { outcome: "failed", output: null, error: { code: "TOOL_FAILED", message: "no" }, journal: [] }),
        terminalCommit("e8", 2), // refused: the row is at revision 3
        toolBarrier("e9", 2),
        terminalCommit("e10", 2, { steps: [], journal: [] }),
        prepare("e3", "a3"), // refused: the id is taken
      ];
      const before = { ...store.groups.figures };
      const settled = together
        ? await Promise.allSettled(operations.map((operation) => store.run(operation)))
        : await (async () => {
            const list: PromiseSettledResult<unknown>[] = [];
            for (const operation of operations) list.push(...(await Promise.allSettled([store.run(operation)])));
            return list;
          })();
      const sent = store.groups.figures.sent - before.sent;
      const outcomes = settled.map((outcome) =>
        outcome.status === "fulfilled" ? { value: outcome.value } : { code: (outcome.reason as { code?: string }).code },
      );
      const rows = await withClient(async (client) => {
        const read = async (sql: string) => (await client.query(sql)).rows;
        return {
          agents: await read(`SELECT * FROM ${schema}.agents ORDER BY agent_id`),
          executions: await read(`SELECT * FROM ${schema}.executions ORDER BY execution_id`),
          steps: await read(`SELECT * FROM ${schema}.steps ORDER BY execution_id, seq`),
          // Positions follow the commit order within the group; each agent's order is what counts.
          journal: await read(`SELECT agent_id, execution_id, role, content, at FROM ${schema}.journal ORDER BY agent_id, position`),
        };
      });
      return { sent, outcomes, rows };
    };
    const alone = await written(false);
    const folded = await written(true);
    expect(alone.sent).toBe(12);
    expect(folded.sent).toBeLessThan(12);
    expect(folded.outcomes).toEqual(alone.outcomes);
    expect(alone.outcomes.filter((outcome) => "code" in outcome).length).toBe(2);
    // Write ids differ run to run: every other column is the same.
    const withoutWriteIds = (rows: typeof alone.rows) => ({
      ...rows,
      steps: rows.steps.map(({ write_id, ...step }) => ({ ...step, written: write_id !== null })),
    });
    expect(withoutWriteIds(folded.rows)).toEqual(withoutWriteIds(alone.rows));
    expect(folded.rows.executions.length).toBe(12);
  });
});
