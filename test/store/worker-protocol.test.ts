// A group's settlements as the store worker answers them (docs/decisions/0131):
// a success whose value is `{ revision }` alone travels as the number, and
// every settlement reads back as the JSON of the settlement itself parsed.

import { describe, expect, it } from "vitest";
import { settlementsOf, settlementsText, type TransferredSettlement } from "../../host/store/sqlite/worker-protocol.js";

class Revisioned {
  constructor(readonly revision: number) {}
}

const settlements: TransferredSettlement[] = [
  { ok: true, value: { revision: 3 } },
  { ok: true, value: { revision: 2 ** 40 } },
  { ok: true, value: { revision: 4, inboxFiledFor: ["parent-1"] } },
  { ok: true, value: { outcome: "active", revision: 1, firstBarrierRevision: 2, firstOfAgent: true } },
  { ok: false, error: { name: "ExecutionRehydrationRequiredError", message: "moved on", code: "EXECUTION_REHYDRATION_REQUIRED" } as never },
  // Not a revision alone: each goes as itself.
  { ok: true, value: { revision: 0 } },
  { ok: true, value: { revision: -0 } },
  { ok: true, value: { revision: 1.5 } },
  { ok: true, value: { revision: "5" } },
  { ok: true, value: new Revisioned(6) },
  { ok: true, value: Object.assign(Object.create(null) as object, { revision: 7 }) },
  { ok: true, value: Object.create({ revision: 8 }) as object },
  { ok: true, value: { revision: 9, toJSON: () => ({ revision: 10 }) } },
  { ok: true, value: null },
  { ok: true, value: undefined },
  { ok: true, value: 11 },
];

describe("the store worker's settlements (docs/decisions/0131)", () => {
  it("reads back every settlement as its own JSON parsed", () => {
    const text = settlementsText(settlements);
    expect(settlementsOf(text)).toEqual(JSON.parse(JSON.stringify(settlements)));
    expect(JSON.stringify(settlementsOf(text))).toBe(JSON.stringify(settlements));
  });

  it("writes a revision alone as the number, anything else as the settlement", () => {
    const text = settlementsText(settlements.slice(0, 3));
    expect(text).toBe(`[3,${2 ** 40},{"ok":true,"value":{"revision":4,"inboxFiledFor":["parent-1"]}}]`);
    expect(settlementsText([])).toBe("[]");
    expect(JSON.parse(settlementsText(settlements.slice(5)))).not.toContainEqual(expect.any(Number));
  });
});
