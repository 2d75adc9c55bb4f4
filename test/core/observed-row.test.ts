// `env.wait` on an execution not live here decided in the core
// (docs/decisions/0018, 0031, 0110): the compiled `observedRowVerdict` and
// `durableWatchVerdict` against the reference model on every fact, the
// cases the decisions spell out, and the host's reading and asking
// (`judgeObservedRow`, `watchDone`) against followers.ts's and
// durable-watch.ts's former rules, written out as they stood, over every
// row, placement, closing, watch kind and waiter.

import { beforeAll, expect, it } from "vitest";
import { AdmissionVerdict, DurableWatchFact as W, DurableWatchVerdict, ObservedRowFact as O, ObservedRowVerdict } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import type { ByIdPlacement } from "../../host/runtime/by-id-placement.js";
import { judgeObservedRow, watchDone } from "../../host/runtime/observed-row.js";
import type { ExecutionRow } from "../../host/store/records.js";
import { durableWatchVerdictFor, observedRowVerdictFor } from "../model/reference-observed-row.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdicts are the model's rules for every fact", () => {
  for (let facts = 0; facts <= O.End + 1; facts += 1) expect(core.observedRowVerdict(facts), `observed ${facts}`).toBe(observedRowVerdictFor(facts));
  for (let facts = 0; facts <= W.End + 1; facts += 1) expect(core.durableWatchVerdict(facts), `watch ${facts}`).toBe(durableWatchVerdictFor(facts));
  expect(core.observedRowVerdict(0xffff_ffff)).toBe(ObservedRowVerdict.None);
  expect(core.durableWatchVerdict(0xffff_ffff)).toBe(DurableWatchVerdict.None);
});

it("a row not running settles; a running one asks its placement, is watched when placed elsewhere (shutdown once closed), else settles", () => {
  expect(core.observedRowVerdict(0)).toBe(ObservedRowVerdict.SettleFromRow);
  expect(core.observedRowVerdict(O.RowFound)).toBe(ObservedRowVerdict.SettleFromRow);
  expect(core.observedRowVerdict(O.RowFound | O.RowRunning)).toBe(ObservedRowVerdict.AskPlacement);
  expect(core.observedRowVerdict(O.RowFound | O.RowRunning | O.PlacementRead | O.RunsElsewhere)).toBe(ObservedRowVerdict.Watch);
  expect(core.observedRowVerdict(O.RowFound | O.RowRunning | O.PlacementRead | O.RunsElsewhere | O.Closed)).toBe(ObservedRowVerdict.SettleShutdown);
  expect(core.observedRowVerdict(O.RowFound | O.RowRunning | O.PlacementRead | O.Closed)).toBe(ObservedRowVerdict.SettleFromRow);
  expect(core.observedRowVerdict(O.RowRunning)).toBe(ObservedRowVerdict.None);
  expect(core.observedRowVerdict(O.RowFound | O.PlacementRead)).toBe(ObservedRowVerdict.None);
});

it("a watch is done once settled, ended, or suspended for a plain watch or an observer; a followed caller waits through no row and a suspension", () => {
  expect(core.durableWatchVerdict(W.Settled | W.UntilEnd)).toBe(DurableWatchVerdict.Done);
  expect(core.durableWatchVerdict(0)).toBe(DurableWatchVerdict.Done);
  expect(core.durableWatchVerdict(W.UntilEnd)).toBe(DurableWatchVerdict.Keep);
  expect(core.durableWatchVerdict(W.RowFound | W.RowTerminal | W.UntilEnd)).toBe(DurableWatchVerdict.Done);
  expect(core.durableWatchVerdict(W.RowFound | W.RowSuspended)).toBe(DurableWatchVerdict.Done);
  expect(core.durableWatchVerdict(W.RowFound | W.RowSuspended | W.UntilEnd)).toBe(DurableWatchVerdict.Keep);
  expect(core.durableWatchVerdict(W.RowFound | W.RowSuspended | W.UntilEnd | W.Observer)).toBe(DurableWatchVerdict.Done);
  expect(core.durableWatchVerdict(W.RowFound)).toBe(DurableWatchVerdict.Keep);
  expect(core.durableWatchVerdict(W.RowTerminal)).toBe(DurableWatchVerdict.None);
});

const STATUSES = [undefined, "terminal", "suspended", "running", "queued"] as const;

function rowOf(status: (typeof STATUSES)[number]): ExecutionRow | undefined {
  return status === undefined ? undefined : ({ executionId: "e1", agentId: "a1", status } as unknown as ExecutionRow);
}

/** followers.ts's `observeFound` before 0110, as it stood: what it did,
 * and whether it read the placement. */
async function observedBefore(row: ExecutionRow | undefined, place: () => Promise<ByIdPlacement>, closed: () => boolean): Promise<string> {
  const running = row !== undefined && row.status !== "terminal" && row.status !== "suspended";
  const placement = running
    ? await place().catch((error: unknown) => {
        if (closed()) return undefined;
        throw error;
      })
    : undefined;
  if (running && (placement === undefined || placement.verdict === AdmissionVerdict.FileForOwner)) {
    if (closed()) return "shutdown";
    return "watch";
  }
  return "settle";
}

const NAMES: Record<ObservedRowVerdict, string> = {
  [ObservedRowVerdict.None]: "none",
  [ObservedRowVerdict.AskPlacement]: "ask",
  [ObservedRowVerdict.Watch]: "watch",
  [ObservedRowVerdict.SettleShutdown]: "shutdown",
  [ObservedRowVerdict.SettleFromRow]: "settle",
};

it("every row, placement (or its failed read) and closing is judged as followers.ts judged it; the placement is read only for a running row", async () => {
  const placements = [
    ...[AdmissionVerdict.RunHere, AdmissionVerdict.FileForOwner, AdmissionVerdict.RefuseNotInstalled, AdmissionVerdict.LeaveFiled].map((verdict) => ({
      verdict,
    })),
    "fails",
  ] as const;
  for (const status of STATUSES) {
    for (const placed of placements) {
      for (const closing of [false, true]) {
        const named = `${status ?? "no row"} placed ${typeof placed === "string" ? placed : placed.verdict} closed ${closing}`;
        let reads = 0;
        const place = (): Promise<ByIdPlacement> => {
          reads += 1;
          return placed === "fails" ? Promise.reject(new Error("the read failed")) : Promise.resolve({ ...placed, inbox: undefined, holder: undefined });
        };
        const row = rowOf(status);
        const before = await observedBefore(row, place, () => closing).catch(() => "thrown");
        const readBefore = reads;
        reads = 0;
        const now = await judgeObservedRow(core, row, place, () => closing).then(
          (verdict) => NAMES[verdict],
          () => "thrown",
        );
        expect({ now, reads }, named).toEqual({ now: before, reads: readBefore });
        expect(reads, named).toBe(status === "running" || status === "queued" ? 1 : 0);
      }
    }
  }
});

/** durable-watch.ts's `ended` before 0110, as it stood. */
function endedBefore(watch: { untilEnd: boolean; waiter: { settled: boolean; observer: boolean } }, row: ExecutionRow | undefined): boolean {
  if (watch.waiter.settled) return true;
  if (row === undefined) return !watch.untilEnd;
  if (row.status === "terminal") return true;
  return row.status === "suspended" && (!watch.untilEnd || watch.waiter.observer);
}

it("every row, watch kind and waiter ends a watch as durable-watch.ts decided", () => {
  for (const status of STATUSES) {
    for (const untilEnd of [false, true]) {
      for (const settled of [false, true]) {
        for (const observer of [false, true]) {
          const watch = { untilEnd, waiter: { settled, observer } };
          const row = rowOf(status);
          expect(watchDone(core, watch, row), `${status ?? "no row"} untilEnd ${untilEnd} settled ${settled} observer ${observer}`).toBe(
            endedBefore(watch, row),
          );
        }
      }
    }
  }
});
