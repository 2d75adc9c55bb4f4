// The reopen of a terminal execution for a new attempt (`env.retry`,
// docs/decisions/0026), on SQLite: one compare-and-set of a `terminal` row
// back to where its last durable barrier left it, and a `retried` step.
// Refused when a later start replaced its turn in memory (`replace-from.ts`).
// The PostgreSQL store runs the same body in a transaction of its own
// (`../postgres/reopen.ts`).

import type { CommittedRevision, ReopenExecutionOperation } from "../records.js";
import { compareAndSet, selectForUpdate } from "./compare-and-set.js";
import { appendStepsAt } from "./timeline.js";
import type { SqliteConnection } from "./driver.js";
import { jsonText } from "./rows.js";
import { replacedRetry } from "../replace-from.js";

export function reopenExecution(connection: SqliteConnection, operation: ReopenExecutionOperation): CommittedRevision {
  const current = selectForUpdate(connection, operation, ["terminal"]);
  const remembered = connection
    .prepare("SELECT 1 AS found FROM journal WHERE agent_id = ? AND execution_id = ? LIMIT 1")
    .get(current.agentId, operation.executionId);
  if (remembered === undefined) throw replacedRetry(operation.executionId, current.agentId);
  const revision = compareAndSet(
    connection,
    operation,
    `
    UPDATE executions SET revision = ?, status = ?, phase = ?, outcome = NULL, output = 'null', error = 'null', metadata = ?, updated_at = ?
    WHERE execution_id = ? AND revision = ?
  `,
    [operation.status, operation.phase, jsonText(operation.metadata), operation.at],
  );
  appendStepsAt(connection, current.end, [{ kind: "retried", at: operation.at, payload: operation.step }]);
  return { revision };
}
