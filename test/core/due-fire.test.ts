// The due sweep's fire decided in the core (docs/decisions/0076, 0102): the
// compiled `dueFireVerdict` against the reference model on every fact, the
// cases the decisions spell out, and the host's carrying out (`fireDueWait`)
// of every error code against due-fire.ts's former rule, written out as it
// stood.

import { beforeAll, expect, it } from "vitest";
import { DueFireFact as Fact, DueFireVerdict as Verdict } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { PhronomyError } from "../../host/errors.js";
import { fireDueWait, type DueFireHost } from "../../host/runtime/due-fire.js";
import type { DueWait } from "../../host/store/due-waits.js";
import { dueFireVerdictFor } from "../model/reference-queries.js";
import { errorOf, EVERY_CODE } from "./every-error-code.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rules for every fact", () => {
  for (let facts = 0; facts <= Fact.End + 1; facts += 1) {
    expect(core.dueFireVerdict(facts), `facts ${facts}`).toBe(dueFireVerdictFor(facts));
  }
  expect(core.dueFireVerdict(0xffff_ffff)).toBe(Verdict.None);
});

it("fired only while open with a definition here; a store failure while open is tried again, anything else dropped", () => {
  expect(core.dueFireVerdict(Fact.DefinedHere)).toBe(Verdict.Fire);
  expect(core.dueFireVerdict(0)).toBe(Verdict.Skip);
  expect(core.dueFireVerdict(Fact.Closed | Fact.DefinedHere)).toBe(Verdict.Skip);
  expect(core.dueFireVerdict(Fact.DefinedHere | Fact.Refused | Fact.StoreFailed)).toBe(Verdict.TryAgain);
  expect(core.dueFireVerdict(Fact.DefinedHere | Fact.Refused | Fact.StoreFailed | Fact.Closed)).toBe(Verdict.Drop);
  expect(core.dueFireVerdict(Fact.DefinedHere | Fact.Refused)).toBe(Verdict.Drop);
  // A store failure that is no refusal, a refusal of a fire never made: cannot hold.
  expect(core.dueFireVerdict(Fact.DefinedHere | Fact.StoreFailed)).toBe(Verdict.None);
  expect(core.dueFireVerdict(Fact.Refused)).toBe(Verdict.None);
});

/** What the sweep saw of one fire. */
async function fired(refusal: unknown, closed: { before: boolean; after: boolean }, defined = true): Promise<{ resumed: boolean; thrown: unknown }> {
  let isClosed = closed.before;
  let resumed = false;
  const host: DueFireHost = {
    logger: { warn: () => undefined },
    core,
    closed: () => isClosed,
    agentHandle: () =>
      defined
        ? {
            resume: () => {
              resumed = true;
              isClosed = closed.after;
              return { executionId: refusal === undefined ? Promise.resolve("e") : Promise.reject(refusal) };
            },
          }
        : undefined,
  };
  const wait: DueWait = { agentId: "a", executionId: "e", waitId: "w", dueAt: 0 };
  try {
    await fireDueWait(host, wait);
    return { resumed, thrown: undefined };
  } catch (error) {
    return { resumed, thrown: error };
  }
}

it("every error code, the environment closed or not as it is refused, is thrown or dropped as due-fire.ts's rule decided it", async () => {
  for (const code of EVERY_CODE) {
    for (const after of [false, true]) {
      const refusal = errorOf(code, undefined);
      const { resumed, thrown } = await fired(refusal, { before: false, after });
      // Before 0102: `error instanceof PhronomyError && error.code === "STORE" && !host.closed()`.
      expect(resumed).toBe(true);
      expect(thrown, `${code} closed ${after}`).toBe(code === "STORE" && !after ? refusal : undefined);
    }
  }
  // A throw that is not a PhronomyError is dropped.
  expect((await fired(new Error("a throw"), { before: false, after: false })).thrown).toBeUndefined();
  expect(await fired(undefined, { before: false, after: false })).toEqual({ resumed: true, thrown: undefined });
});

it("closed, or its definition not made here: not fired at all", async () => {
  expect(await fired(new PhronomyError("STORE", "x"), { before: true, after: true })).toEqual({ resumed: false, thrown: undefined });
  expect(await fired(new PhronomyError("STORE", "x"), { before: false, after: false }, false)).toEqual({ resumed: false, thrown: undefined });
});
