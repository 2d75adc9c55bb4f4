// The id of an execution the application did not name: a UUID of version 7
// (RFC 9562 §5.7), its first 48 bits the creation time in milliseconds and
// the rest random, so that ids made one after another sort one after
// another. Why (docs/decisions/0050): every store keys an execution's rows
// by this id (the executions primary key, the steps and approval rows); a
// random id (version 4) lands each new execution, and each step it
// appends, in a random leaf of those indexes, so a group commit of 30
// operations wrote ≈2 pages per operation to the write-ahead log; ids in
// time order land in the indexes' last leaves, shared by the group.

import { randomUUID } from "node:crypto";

/** A new execution id: a version 7 UUID made at `now` (milliseconds since
 * the epoch). Its random part is a version 4 UUID's, so it is as
 * unguessable as `randomUUID()` less the 48 bits of time. */
export function newExecutionId(now: number = Date.now()): string {
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx
  const time = Math.trunc(now).toString(16).padStart(12, "0");
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`;
}
