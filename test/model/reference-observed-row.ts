// The reference model of `env.wait` on an execution not live here, moved
// out of the host by docs/decisions/0110 (`observedRowVerdict`,
// `durableWatchVerdict`): each rule written the simple way (named facts, an
// ordered list of rules, the first that holds answers), as the oracle the
// compiled core must match on every fact (test/core) and on random
// arguments across the u32 range (test/fuzz/query-differential).

import { DurableWatchFact as W, DurableWatchVerdict, ObservedRowFact as O, ObservedRowVerdict } from "../../assembly/abi.js";

// -- a row read (0018, 0031) -----------------------------------------------------------

interface ObservedRead {
  readonly row: boolean;
  readonly running: boolean;
  readonly placed: boolean;
  readonly elsewhere: boolean;
  readonly closed: boolean;
}

const OBSERVED_RULES: readonly { readonly when: (f: ObservedRead) => boolean; readonly verdict: ObservedRowVerdict }[] = [
  { when: (f) => f.running && !f.row, verdict: ObservedRowVerdict.None },
  { when: (f) => f.placed && !f.running, verdict: ObservedRowVerdict.None },
  { when: (f) => (f.elsewhere || f.closed) && !f.placed, verdict: ObservedRowVerdict.None },
  { when: (f) => !f.running, verdict: ObservedRowVerdict.SettleFromRow },
  { when: (f) => !f.placed, verdict: ObservedRowVerdict.AskPlacement },
  { when: (f) => f.elsewhere && f.closed, verdict: ObservedRowVerdict.SettleShutdown },
  { when: (f) => f.elsewhere, verdict: ObservedRowVerdict.Watch },
  { when: () => true, verdict: ObservedRowVerdict.SettleFromRow },
];

export function observedRowVerdictFor(facts: number): ObservedRowVerdict {
  if (facts < 0 || facts >= O.End) return ObservedRowVerdict.None;
  const read: ObservedRead = {
    row: (facts & O.RowFound) !== 0,
    running: (facts & O.RowRunning) !== 0,
    placed: (facts & O.PlacementRead) !== 0,
    elsewhere: (facts & O.RunsElsewhere) !== 0,
    closed: (facts & O.Closed) !== 0,
  };
  return OBSERVED_RULES.find((rule) => rule.when(read))!.verdict;
}

// -- a durable watch (0018) ---------------------------------------------------------------

interface WatchRead {
  readonly settled: boolean;
  readonly row: boolean;
  readonly terminal: boolean;
  readonly suspended: boolean;
  readonly untilEnd: boolean;
  readonly observer: boolean;
}

const WATCH_RULES: readonly { readonly when: (f: WatchRead) => boolean; readonly verdict: DurableWatchVerdict }[] = [
  { when: (f) => (f.terminal || f.suspended) && !f.row, verdict: DurableWatchVerdict.None },
  { when: (f) => f.terminal && f.suspended, verdict: DurableWatchVerdict.None },
  { when: (f) => f.settled, verdict: DurableWatchVerdict.Done },
  { when: (f) => !f.row && f.untilEnd, verdict: DurableWatchVerdict.Keep },
  { when: (f) => !f.row, verdict: DurableWatchVerdict.Done },
  { when: (f) => f.terminal, verdict: DurableWatchVerdict.Done },
  { when: (f) => f.suspended && (!f.untilEnd || f.observer), verdict: DurableWatchVerdict.Done },
  { when: () => true, verdict: DurableWatchVerdict.Keep },
];

export function durableWatchVerdictFor(facts: number): DurableWatchVerdict {
  if (facts < 0 || facts >= W.End) return DurableWatchVerdict.None;
  const read: WatchRead = {
    settled: (facts & W.Settled) !== 0,
    row: (facts & W.RowFound) !== 0,
    terminal: (facts & W.RowTerminal) !== 0,
    suspended: (facts & W.RowSuspended) !== 0,
    untilEnd: (facts & W.UntilEnd) !== 0,
    observer: (facts & W.Observer) !== 0,
  };
  return WATCH_RULES.find((rule) => rule.when(read))!.verdict;
}
