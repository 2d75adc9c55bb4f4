// The refusal of a purge while the agent has executions that have not
// ended: the same error from the environment (an agent live here) and from
// either store (its durable rows), whether or not the agent is defined in
// the process that asked.

import { AgentBusyError } from "../errors.js";

/** How many unfinished execution ids a refused purge names. */
const unfinishedNamedMax = 5;

/** A purge refused because the agent's durable state holds executions
 * that have not ended (running or suspended): the same answer whether or
 * not the agent is defined in this process. */
export function agentHasUnfinishedExecutions(agentId: string, executionIds: readonly string[]): AgentBusyError {
  const named = executionIds.slice(0, unfinishedNamedMax);
  return new AgentBusyError(
    agentId,
    `agent "${agentId}" cannot be purged: it has unfinished executions (${named.join(", ")}); let them end (complete, cancel, or recover) first`,
    { unfinishedExecutionIds: named },
  );
}
