// The reopen of a terminal execution for a new attempt (`env.retry`,
// docs/decisions/0026) on PostgreSQL: the SQLite body (`../sqlite/reopen.ts`)
// in a transaction of its own — the row locked `FOR UPDATE`, the
// compare-and-set fenced by the agent's lease.

import type { CommittedRevision, ReopenExecutionOperation } from "../records.js";
import { jsonText } from "../sqlite/rows.js";
import { appendSteps, compareAndSet, query, selectForUpdate, type OperationContext } from "./compare-and-set.js";
import { replacedRetry } from "../replace-from.js";

export async function reopenExecution(context: OperationContext, operation: ReopenExecutionOperation): Promise<CommittedRevision> {
  const current = await selectForUpdate(context, operation, ["terminal"]);
  const remembered = await query(context, "SELECT 1 FROM journal WHERE agent_id = $1 AND execution_id = $2 LIMIT 1", [current.agentId, operation.executionId]);
  if (remembered.rows.length === 0) throw replacedRetry(operation.executionId, current.agentId);
  const revision = await compareAndSet(
    context,
    operation,
    current.agentId,
    "status = $2, phase = $3, outcome = NULL, output = 'null', error = 'null', metadata = $4, updated_at = $5",
    [operation.status, operation.phase, jsonText(operation.metadata), operation.at],
  );
  await appendSteps(context, operation.executionId, [{ kind: "retried", at: operation.at, payload: operation.step }]);
  return { revision };
}
