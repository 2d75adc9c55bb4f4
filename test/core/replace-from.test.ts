// `replaceFrom`'s refusals decided in the core (docs/decisions/0070, 0087):
// the compiled `replaceVerdict` against the reference model on every fact;
// the table a replacing preparation carries; and a store driven by that
// table — a table the core did not give (every verdict "refuse unknown")
// makes the store refuse a cut the rules allow, writing nothing, so the
// store looks the core's verdict up rather than deciding itself.

import { beforeAll, expect, it } from "vitest";
import { ReplaceFact as Fact, ReplaceVerdict as Verdict } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { replaceVerdictFor } from "../model/reference-queries.js";
import { journalEntry, openTemporaryStore, prepare, providerBarrier, terminalCommit } from "../store/fixtures.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rules for every fact", () => {
  for (let facts = 0; facts <= Fact.End + 1; facts += 1) expect(core.replaceVerdict(facts), `facts ${facts}`).toBe(replaceVerdictFor(facts));
  expect(core.replaceVerdict(0xffff_ffff)).toBe(Verdict.None);
  expect(core.replaceVerdicts()).toEqual(Array.from({ length: Fact.End }, (_, facts) => replaceVerdictFor(facts)));
});

it("replaces only an ended execution of this conversation with a record in memory; refuses the rest by name", () => {
  const row = Fact.RowFound | Fact.SameConversation | Fact.Ended;
  expect(core.replaceVerdict(row | Fact.InMemory)).toBe(Verdict.Replace);
  expect(core.replaceVerdict(Fact.InMemory)).toBe(Verdict.Replace);
  expect(core.replaceVerdict(row)).toBe(Verdict.RefuseNotInMemory);
  expect(core.replaceVerdict(0)).toBe(Verdict.RefuseUnknown);
  expect(core.replaceVerdict(Fact.RowFound | Fact.Ended | Fact.InMemory)).toBe(Verdict.RefuseOtherConversation);
  expect(core.replaceVerdict(Fact.RowFound | Fact.SameConversation | Fact.InMemory)).toBe(Verdict.RefuseUnfinished);
  expect(core.replaceVerdict(Fact.Ended)).toBe(Verdict.None);
});

it("the store carries out the verdict the preparation brings: the core's table cuts, another table refuses and writes nothing", async () => {
  const store = await openTemporaryStore();
  try {
    await store.ensureAgent("support", 1);
    await store.run(prepare("e1", "support", { journal: [journalEntry("e1", "user", "e1 asks")] }));
    await store.run(providerBarrier("e1", 1));
    await store.run(terminalCommit("e1", 2, { journal: [journalEntry("e1", "assistant", "e1 answers", 40)] }));
    const refusing = Array.from({ length: Fact.End }, () => Verdict.RefuseUnknown);
    const refused = await store.run(
      prepare("e2", "support", { replaceFrom: "e1", replaceVerdicts: refusing, journal: [journalEntry("e2", "user", "e2 asks")] }),
    );
    expect(refused).toMatchObject({ outcome: "not_established", error: { code: "EXECUTION_NOT_FOUND", details: { reason: "replace_unknown" } } });
    expect((await store.readJournal("support", 10)).map((record) => record.executionId)).toEqual(["e1", "e1"]);
    const replaced = await store.run(prepare("e3", "support", { replaceFrom: "e1", journal: [journalEntry("e3", "user", "e3 asks")] }));
    expect(replaced).toMatchObject({ outcome: "active" });
    expect((await store.readJournal("support", 10)).map((record) => record.executionId)).toEqual(["e3"]);
  } finally {
    await store.close();
  }
});

it("a replacing preparation without the core's table is refused as bad input, naming the field", async () => {
  const store = await openTemporaryStore();
  try {
    await store.ensureAgent("support", 1);
    const operation = { ...prepare("e2", "support", { replaceFrom: "e1" }), replaceVerdicts: [1, 2] };
    await expect(Promise.resolve().then(() => store.run(operation))).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining("replaceVerdicts"),
    });
  } finally {
    await store.close();
  }
});
