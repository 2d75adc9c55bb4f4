// Whether a store is a SQLite visitor (`SqliteStore.openVisitor`,
// `sqlite-visitor.ts`), told by its `visitor` mark. Apart from the
// visitor's class so that the runtime, which asks this of every store it
// opens, does not load the SQLite store's modules for a PostgreSQL
// application (docs/decisions/0054).

import type { SqliteVisitorStore } from "../sqlite-visitor.js";
import type { ExecutionStore } from "../store.js";

/** True for a store opened with `SqliteStore.openVisitor`. */
export function isVisitorStore(store: ExecutionStore): store is SqliteVisitorStore {
  return (store as Partial<SqliteVisitorStore>).visitor === true;
}
