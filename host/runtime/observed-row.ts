// `env.wait` on an execution not live here (docs/decisions/0018, 0031): its
// row read, whether it is watched (another process runs it) or settled from
// the row; and whether a durable watch's read ends the watch. The core
// decides (`observedRowVerdict`, `durableWatchVerdict`,
// docs/decisions/0110); the host reads the facts — the core's placement of
// the conversation only when the core asks — and carries the verdict out.

import { AdmissionVerdict, DurableWatchFact, DurableWatchVerdict, ObservedRowFact, ObservedRowVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import type { ExecutionRow } from "../store/records.js";
import type { ByIdPlacement } from "./by-id-placement.js";

/** What `env.wait` does with `row` (undefined: none): `place` reads where
 * the core places its conversation — only when the core asks (a row still
 * running); a read that fails while `closed()` reads as placed elsewhere,
 * any other failure is thrown. */
export async function judgeObservedRow(
  core: Pick<ControlCore, "observedRowVerdict">,
  row: ExecutionRow | undefined,
  place: (agentId: string) => Promise<ByIdPlacement>,
  closed: () => boolean,
): Promise<ObservedRowVerdict> {
  let facts = 0;
  if (row !== undefined) facts |= ObservedRowFact.RowFound;
  if (row !== undefined && row.status !== "terminal" && row.status !== "suspended") facts |= ObservedRowFact.RowRunning;
  const verdict = core.observedRowVerdict(facts) as ObservedRowVerdict;
  if (verdict !== ObservedRowVerdict.AskPlacement || row === undefined) return verdict;
  // The facts' read failing because the environment closed meanwhile is
  // its shutdown.
  const placement = await place(row.agentId).catch((error: unknown) => {
    if (closed()) return undefined;
    throw error;
  });
  facts |= ObservedRowFact.PlacementRead;
  if (placement === undefined || placement.verdict === AdmissionVerdict.FileForOwner) facts |= ObservedRowFact.RunsElsewhere;
  if (closed()) facts |= ObservedRowFact.Closed;
  return core.observedRowVerdict(facts) as ObservedRowVerdict;
}

/** Whether a durable watch's read of `row` (undefined: none) ends it;
 * `untilEnd`: handed over by a lost lease; `observer`, `settled`: its
 * waiter's. */
export function watchDone(
  core: Pick<ControlCore, "durableWatchVerdict">,
  watch: { readonly untilEnd: boolean; readonly waiter: { readonly settled: boolean; readonly observer: boolean } },
  row: ExecutionRow | undefined,
): boolean {
  let facts = 0;
  if (watch.waiter.settled) facts |= DurableWatchFact.Settled;
  if (watch.untilEnd) facts |= DurableWatchFact.UntilEnd;
  if (watch.waiter.observer) facts |= DurableWatchFact.Observer;
  if (row !== undefined) facts |= DurableWatchFact.RowFound;
  if (row?.status === "terminal") facts |= DurableWatchFact.RowTerminal;
  if (row?.status === "suspended") facts |= DurableWatchFact.RowSuspended;
  // `None` cannot come of these facts: kept, and read again.
  return (core.durableWatchVerdict(facts) as DurableWatchVerdict) === DurableWatchVerdict.Done;
}
