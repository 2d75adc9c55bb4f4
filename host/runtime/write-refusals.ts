// Refusals of work this process may not write: a store that can no longer
// write (its file removed or replaced, its worker lost for good:
// `store.failure`, docs/decisions/0021), and a SQLite visitor, which never
// writes executions (docs/decisions/0015).

import { InvalidInputError, StoreError } from "../errors.js";
import type { ExecutionStore } from "../store/store.js";

/** Throws the store's failure, if it has one, as the refusal of `what`:
 * rather than admitting work that could only half happen. */
export function refuseUnwritableStore(store: ExecutionStore, what: string): void {
  const failure = store.failure;
  if (failure === undefined) return;
  throw new StoreError(`${what} was refused: ${failure.message}`, { cause: failure, details: failure.details });
}

/** Throws the refusal of `what` in an environment visiting the store. */
export function refuseVisitor(store: ExecutionStore, what: string): never {
  throw new InvalidInputError(
    `${what} was refused: this environment visits the store at ${store.path}, and a visitor never writes executions — start, recover and purge in the process that owns the store; a visitor reads and decides approvals (agent.resume)`,
    { details: { reason: "visitor" } },
  );
}
