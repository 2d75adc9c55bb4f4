// What this process does when the store says it no longer holds some
// conversations' leases (`StoreSignals.leasesLost`): it tells the core,
// and carries out what the core answers. The host decides nothing here.
//
// Each lost conversation with a core entry here is reported owned
// elsewhere (`ConversationOwned(elsewhere)`, while the store still says
// so: a lease taken back before the loop ran the signal is the takeover's
// to report). The core answers for the callers waiting here that nothing
// here will tell, handed to the one follower of executions run elsewhere
// (durable-watch.ts), which settles them from the row once it ends:
//
// * `FollowQueued`: the Runs of the messages counted queued here
//   (queue-head.ts carries it out);
// * `FollowAdmitted(execution)`: the Runs of the execution holding the
//   conversation's admission when it is parked here — suspended, or held
//   for recovery (`followAdmitted` below). The admission table holds one
//   execution per conversation, so there is at most one.
//
// An execution still running here keeps its callers: its next write is
// refused by the fence, and they are told EXECUTION_REHYDRATION_REQUIRED
// at once (docs/decisions/0010), as before.
//
// Nothing durable is touched: the entries stay as they are for the
// recovery that follows if the lease comes back.

import type { AgentEntry, ExecutionEntry } from "./requests.js";
import type { Waiting } from "./run.js";

/** What the report reaches (followers.ts wires it). */
export interface LostLeaseHost {
  /** The conversations with a core entry here; those of `agentIds` at
   * rest are rebuilt first (docs/decisions/0092). */
  agentEntries(agentIds: ReadonlySet<string>): readonly AgentEntry[];
  /** Tells the core the conversation is owned elsewhere, if the store
   * still says so. */
  leaseLost(agent: AgentEntry): void;
}

/** Tells the core each lost conversation live here is owned elsewhere (on the loop). */
export function reportLostConversations(host: LostLeaseHost, agentIds: readonly string[]): void {
  const lost = new Set(agentIds);
  for (const agent of host.agentEntries(lost)) if (lost.has(agent.id)) host.leaseLost(agent);
}

/** Effect FollowAdmitted (in an apply): every caller waiting here on the
 * parked execution follows it to the process that runs it next. An
 * entry gone, or of another generation, has no callers to hand over. */
export function followAdmitted(
  entry: ExecutionEntry | undefined,
  generation: number,
  follow: (executionId: string, agentId: string, waiter: Waiting) => void,
): void {
  if (entry === undefined || entry.generation !== generation) return;
  for (const waiter of entry.waiters.splice(0)) follow(entry.executionId, entry.agent.id, waiter);
}
