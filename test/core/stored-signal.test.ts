// A stored signal offered to its event wait, its fate decided in the core
// (docs/decisions/0077, 0102): the compiled `storedSignalVerdict` against the
// reference model on every fact, the cases the decisions spell out, and the
// host's carrying out (`EventSignals.suspended`, over a store that keeps one
// signal) of every error code against event-signals.ts's former rule,
// written out as it stood.

import { beforeAll, expect, it } from "vitest";
import { StoredSignalFact as Fact, StoredSignalVerdict as Verdict } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { EventSignals } from "../../host/runtime/event-signals.js";
import type { ApprovalRequest } from "../../host/runtime/events.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { storedSignalVerdictFor } from "../model/reference-queries.js";
import { errorOf, EVERY_CODE } from "./every-error-code.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rules for every fact", () => {
  for (let facts = 0; facts <= Fact.End + 1; facts += 1) {
    expect(core.storedSignalVerdict(facts), `facts ${facts}`).toBe(storedSignalVerdictFor(facts));
  }
  expect(core.storedSignalVerdict(0xffff_ffff)).toBe(Verdict.None);
});

it("offered when defined here; dropped once given or its payload refused; kept for the wait's recovery otherwise", () => {
  expect(core.storedSignalVerdict(Fact.DefinedHere)).toBe(Verdict.Resume);
  expect(core.storedSignalVerdict(0)).toBe(Verdict.Keep);
  expect(core.storedSignalVerdict(Fact.DefinedHere | Fact.Answered)).toBe(Verdict.Drop);
  expect(core.storedSignalVerdict(Fact.DefinedHere | Fact.Answered | Fact.Refused | Fact.PayloadRefused)).toBe(Verdict.Drop);
  expect(core.storedSignalVerdict(Fact.DefinedHere | Fact.Answered | Fact.Refused)).toBe(Verdict.Keep);
  // A refusal never answered, a payload refusal that is no refusal, an answer with no handle: cannot hold.
  expect(core.storedSignalVerdict(Fact.DefinedHere | Fact.Refused)).toBe(Verdict.None);
  expect(core.storedSignalVerdict(Fact.DefinedHere | Fact.Answered | Fact.PayloadRefused)).toBe(Verdict.None);
  expect(core.storedSignalVerdict(Fact.Answered)).toBe(Verdict.None);
});

/** What the store saw of one stored signal offered to its wait. */
async function offered(refusal: unknown, defined: boolean): Promise<{ resumed: boolean; dropped: boolean }> {
  let resumed = false;
  let dropped = false;
  let finished: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const store = {
    capabilities: { signals: true },
    takeStoredSignal: () => Promise.resolve({ paid: true }),
    dropSignal: () => {
      dropped = true;
      return Promise.resolve();
    },
  } as unknown as ExecutionStore;
  const signals = new EventSignals({
    store,
    logger: { warn: () => undefined, debug: () => finished() },
    core,
    assertOpen: () => undefined,
    agentHandle: () =>
      defined
        ? {
            resumeDecided: () => {
              resumed = true;
              const executionId = refusal === undefined ? Promise.resolve("e") : Promise.reject(refusal);
              return { executionId } as never;
            },
          }
        : undefined,
    placeById: () => Promise.reject(new Error("not placed here")),
  });
  signals.suspended({ kind: "event", key: "pay:1", approvalId: "w", executionId: "e", agentId: "a" } as ApprovalRequest);
  // Settled: dropped, told at debug (kept), or nothing more to do.
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 20))]);
  return { resumed, dropped };
}

it("every error code is dropped or kept as event-signals.ts's rule decided it; with no definition here nothing is resumed nor dropped", async () => {
  for (const code of EVERY_CODE) {
    // Before 0102: `if ((error as PhronomyError).code !== "INVALID_INPUT") throw error;` then dropped.
    expect(await offered(errorOf(code, undefined), true), code).toEqual({ resumed: true, dropped: code === "INVALID_INPUT" });
  }
  expect(await offered(new Error("a throw"), true)).toEqual({ resumed: true, dropped: false });
  expect(await offered(undefined, true)).toEqual({ resumed: true, dropped: true });
  expect(await offered(undefined, false)).toEqual({ resumed: false, dropped: false });
});
