// `env.wait` on an execution not live here (docs/decisions/0018, 0031;
// moved here by 0110): its row read, whether it is watched — another
// process runs it — or settled from the row; and, for a watch, whether a
// row it polled ends it. A pure function of facts the host read. Exported
// so the table test walks every fact.
//
// Rules kept here, a row read (`observedRowVerdict`):
// * Not running (terminal, suspended, or no row): settled from the row.
// * Running: where its conversation runs is the core's placement (read
//   when asked); placed for its owner elsewhere, watched — or, the
//   environment closed meanwhile, settled with its shutdown; else settled
//   from the row (this process would run it: its recovery tells).
// A watch (`durableWatchVerdict`):
// * Done once its waiter settled, the row terminal, or the row suspended
//   for a plain watch or an exact observer; a followed caller (handed over
//   by a lost lease) waits through "no row yet" and, unless an exact
//   observer, through a suspension. A plain watch with no row is done (the
//   execution is gone).

import { DurableWatchFact, DurableWatchVerdict, ObservedRowFact, ObservedRowVerdict } from "../abi";

/** What `env.wait` does with a row it read, given `facts`
 * (`ObservedRowFact` bits). `None` for facts out of range, `RowRunning`
 * without `RowFound`, `PlacementRead` of a row not running,
 * `RunsElsewhere` without `PlacementRead`, or `Closed` without it. */
export function observedRowVerdictOf(facts: u32): u32 {
  if (facts >= <u32>ObservedRowFact.End) return ObservedRowVerdict.None;
  const row = (facts & ObservedRowFact.RowFound) != 0;
  const running = (facts & ObservedRowFact.RowRunning) != 0;
  const placed = (facts & ObservedRowFact.PlacementRead) != 0;
  const elsewhere = (facts & ObservedRowFact.RunsElsewhere) != 0;
  const closed = (facts & ObservedRowFact.Closed) != 0;
  if (running && !row) return ObservedRowVerdict.None;
  if (placed && !running) return ObservedRowVerdict.None;
  if ((elsewhere || closed) && !placed) return ObservedRowVerdict.None;
  if (!running) return ObservedRowVerdict.SettleFromRow;
  if (!placed) return ObservedRowVerdict.AskPlacement;
  if (!elsewhere) return ObservedRowVerdict.SettleFromRow;
  return closed ? ObservedRowVerdict.SettleShutdown : ObservedRowVerdict.Watch;
}

/** What comes of a durable watch's read, given `facts`
 * (`DurableWatchFact` bits). `None` for facts out of range, a row's state
 * without `RowFound`, or `RowTerminal` with `RowSuspended`. */
export function durableWatchVerdictOf(facts: u32): u32 {
  if (facts >= <u32>DurableWatchFact.End) return DurableWatchVerdict.None;
  const settled = (facts & DurableWatchFact.Settled) != 0;
  const row = (facts & DurableWatchFact.RowFound) != 0;
  const terminal = (facts & DurableWatchFact.RowTerminal) != 0;
  const suspended = (facts & DurableWatchFact.RowSuspended) != 0;
  const untilEnd = (facts & DurableWatchFact.UntilEnd) != 0;
  const observer = (facts & DurableWatchFact.Observer) != 0;
  if ((terminal || suspended) && !row) return DurableWatchVerdict.None;
  if (terminal && suspended) return DurableWatchVerdict.None;
  if (settled || terminal) return DurableWatchVerdict.Done;
  if (!row) return untilEnd ? DurableWatchVerdict.Keep : DurableWatchVerdict.Done;
  return suspended && (!untilEnd || observer) ? DurableWatchVerdict.Done : DurableWatchVerdict.Keep;
}
