// `toolCallConcurrency` decided in the core (docs/decisions/0087): the
// compiled `toolCallsToStart` against the reference model on every count
// of a batch up to 12 calls and every limit up to 13, the bounds, and a
// batch walked call by call as a session walks it — the calls started,
// the ones held back, none after the session ended.

import { beforeAll, expect, it } from "vitest";
import { Limit, ToolCallCount } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { toolCallsToStartFor } from "../model/reference-queries.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled count is the model's for every small batch, count and limit", () => {
  for (let calls = 0; calls <= 12; calls += 1) {
    for (let started = 0; started <= calls + 1; started += 1) {
      for (let settled = 0; settled <= started + 1; settled += 1) {
        for (let limit = 0; limit <= 13; limit += 1) {
          for (const finished of [0, 1, 2]) {
            const expected = toolCallsToStartFor(calls, started, settled, limit, finished);
            expect(core.toolCallsToStart(calls, started, settled, limit, finished), `${calls} ${started} ${settled} ${limit} ${finished}`).toBe(expected);
          }
        }
      }
    }
  }
});

it("counts that cannot hold together, and a batch past the in-flight limit, are refused", () => {
  expect(core.toolCallsToStart(3, 4, 0, 1, 0)).toBe(ToolCallCount.Invalid);
  expect(core.toolCallsToStart(3, 1, 2, 1, 0)).toBe(ToolCallCount.Invalid);
  expect(core.toolCallsToStart(Limit.InFlightMax + 1, 0, 0, 0, 0)).toBe(ToolCallCount.Invalid);
  expect(core.toolCallsToStart(Limit.InFlightMax, 0, 0, 0, 0)).toBe(Limit.InFlightMax);
  expect(core.toolCallsToStart(3, 0, 0, 0xffff_ffff, 0)).toBe(3);
});

it("a batch of four under a limit of 2 starts two, then one as each settles; an ended session starts none", () => {
  let started = core.toolCallsToStart(4, 0, 0, 2, 0);
  expect(started).toBe(2);
  expect(core.toolCallsToStart(4, started, 0, 2, 0)).toBe(0);
  started += core.toolCallsToStart(4, started, 1, 2, 0);
  expect(started).toBe(3);
  started += core.toolCallsToStart(4, started, 2, 2, 0);
  expect(started).toBe(4);
  expect(core.toolCallsToStart(4, started, 3, 2, 0)).toBe(0);
  expect(core.toolCallsToStart(4, 0, 0, 0, 0)).toBe(4);
  expect(core.toolCallsToStart(4, 1, 0, 1, 1)).toBe(0);
  expect(core.toolCallsToStart(4, 1, 1, 1, 1)).toBe(0);
});
