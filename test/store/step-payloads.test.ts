// A group's step payloads sent to the store worker as their column text
// (docs/decisions/0129): every row the worker writes is byte for byte the
// one it wrote when it parsed the whole group's JSON and wrote each payload
// again, for each operation type, with payloads JSON writes in a form of
// its own (escapes, a lone surrogate, a Date, undefined, -0, integer keys;
// a payload's own toJSON is now asked with the key "", as inline: 0129).

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { OffloadOperation } from "../../host/store/offload-operation.js";
import type { Json, StepRecord } from "../../host/store/records.js";
import type { SqliteConnection } from "../../host/store/sqlite/driver.js";
import { openStoreConnection } from "../../host/store/sqlite/schema.js";
import { decodeGroup, encodeGroup } from "../../host/store/sqlite/step-payloads.js";
import { commitGroup, type Settlement } from "../../host/store/sqlite/transaction.js";
import { approvalCommit, prepare, providerBarrier, refundCall, suspendForApproval, temporaryDirectory, terminalCommit, toolBarrier } from "./fixtures.js";

/** Payloads whose JSON text is not the obvious one. */
const awkward: unknown[] = [
  { text: 'say "hi"\\ \n\t\u2028 é 😀 \ud800 end', n: -0, big: 1e21, small: 5e-7 },
  { 10: "ten", b: 1, 2: "two", a: [1, undefined, () => 0, null], nested: { gone: undefined, kept: 1 } },
  new Date(Date.UTC(2026, 11, 7, 16, 0, 0)),
  undefined,
  null,
  "plain text",
  JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as Json,
  [],
  {},
];

function stepsOf(at: number): StepRecord[] {
  return awkward.map((payload) => ({ kind: "tool_results", at, payload: payload as Json }));
}

/** Each operation type a run writes, with the awkward payloads in its
 * steps, then one that does not carry steps (the approval). */
function operations(): OffloadOperation[] {
  return [
    prepare("e1"),
    toolBarrier("e1", 1, { steps: stepsOf(20) }),
    providerBarrier("e1", 2, { steps: stepsOf(30) }),
    terminalCommit("e1", 3, { steps: stepsOf(40) }),
    prepare("e2"),
    suspendForApproval("e2", 1, "approval-1", "hash-1", { steps: stepsOf(50) }),
    approvalCommit("e2", 2, { toolBatch: [refundCall("e2")] }),
    // A step that is not an object: sent as it was, refused as it was.
    terminalCommit("e3", 1, { steps: [null as unknown as StepRecord] }),
    // Steps written through a toJSON: sent as they were.
    prepare("e4"),
    providerBarrier("e4", 1, {
      steps: [{ kind: "tool_results", at: 20, payload: 1, toJSON: () => ({ kind: "tool_results", at: 21, payload: 2 }) } as StepRecord],
    }),
  ];
}

async function connection(): Promise<SqliteConnection> {
  return openStoreConnection(join(await temporaryDirectory(), "store.db"), { synchronous: "NORMAL" });
}

/** Every row of every table, as SQLite holds it. */
function rows(connection: SqliteConnection): Record<string, unknown[]> {
  const tables = connection
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")
    .all()
    .map((row) => String(row["name"]));
  return Object.fromEntries(tables.map((table) => [table, connection.prepare(`SELECT * FROM "${table}"`).all()]));
}

function outcomes(settlements: Settlement[]): unknown[] {
  return settlements.map((settlement) => (settlement.ok ? settlement.value : settlement.error.message));
}

describe("step payloads encoded once (docs/decisions/0129)", () => {
  it("writes every row byte for byte as the group's JSON parsed in the worker did, for each operation type", async () => {
    const before = await connection();
    const after = await connection();
    const group = operations();
    // Before: the whole group as one text, parsed by the worker.
    const settledBefore = commitGroup(before, JSON.parse(JSON.stringify(group)) as OffloadOperation[]);
    // Now: the payloads beside the text, as the message's clone copies them.
    const encoded = structuredClone(encodeGroup(group));
    expect(encoded.encoded).toBe("0111010000");
    expect(encoded.operations).not.toContain("say \\");
    expect(encoded.payloads).toContain('"say \\"hi\\"');
    const settledAfter = commitGroup(after, decodeGroup(encoded));
    expect(outcomes(settledAfter)).toEqual(outcomes(settledBefore));
    expect(settledBefore.map((settlement) => settlement.ok)).toEqual([true, true, true, true, true, true, true, false, true, true]);
    const written = rows(after);
    expect(written).toEqual(rows(before));
    // The awkward payloads are there, as JSON wrote them.
    const payloads = (written["steps"] ?? []).map((row) => String((row as Record<string, unknown>)["payload"]));
    for (const payload of awkward) expect(payloads).toContain(JSON.stringify(payload ?? null));
  });

  it("leaves the operations it was given as they were (the caller's objects are not the message's)", () => {
    const group = operations();
    const text = JSON.stringify(group);
    const payload = (group[1] as unknown as { steps: StepRecord[] }).steps[0]!.payload;
    encodeGroup(group);
    expect(JSON.stringify(group)).toBe(text);
    expect((group[1] as unknown as { steps: StepRecord[] }).steps[0]!.payload).toBe(payload);
  });

  it("sends a sparse steps array as it is, and refuses a message whose payloads do not add up", () => {
    // A hole is not a step: that operation goes as it was (the worker refuses it alone).
    const sparse = terminalCommit("e5", 1, { steps: new Array<StepRecord>(2) });
    const group = [toolBarrier("e1", 1, { steps: stepsOf(20) }), sparse];
    const encoded = encodeGroup(group);
    expect(encoded.encoded).toBe("10");
    expect(decodeGroup(encoded)).toHaveLength(2);
    // A format mistake fails loudly instead of binding shifted text.
    expect(() => decodeGroup({ ...encoded, payloads: `${encoded.payloads} ` })).toThrow(/step payloads: 2 operations/);
    expect(() => decodeGroup({ ...encoded, encoded: "1" })).toThrow(/1 marks/);
  });
});
