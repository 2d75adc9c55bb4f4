// How many calls of a tool batch run at once (`toolCallConcurrency`,
// docs/decisions/0087): the batch's barrier is durable, every call of it is
// counted in flight by the core (`OperationSettled` ends each), and this
// query says how many of the calls not started yet the session starts now.
// A pure function of the batch's counts: the session starts that many, in
// the model's order (the next ones are the first not started), and asks
// again each time a call settles. Exported so the tests walk it.
//
// Rules kept here:
// * No limit (0): every call starts with the batch.
// * A limit: at most that many run at once; as one settles, the next starts.
// * A session that ended starts nothing more: the calls held back never
//   run (the host settles them, so the core stops counting them).

import { Limit, ToolCallCount } from "../abi";

/** The calls to start now, of a batch of `calls` of which `started` were
 * started and `settled` settled, under `limit` (0: none) — or
 * `ToolCallCount.Invalid` for counts that cannot hold together.
 * `finished` (1/0): the session ended. */
export function toolCallsToStartOf(calls: u32, started: u32, settled: u32, limit: u32, finished: u32): u32 {
  if (calls > <u32>Limit.InFlightMax || started > calls || settled > started || finished > 1) return ToolCallCount.Invalid;
  if (finished == 1) return 0;
  const waiting = calls - started;
  if (limit == 0) return waiting;
  const running = started - settled;
  if (running >= limit) return 0;
  const room = limit - running;
  return room < waiting ? room : waiting;
}
