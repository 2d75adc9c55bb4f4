// What this process does when the store says it no longer holds some
// conversations' leases (`StoreSignals.leasesLost`): their executions go on
// wherever the conversation is taken next, so every caller waiting here on
// one of them that nothing here will tell — a start's or resume's Run of an
// execution suspended or held for recovery here — is handed to the one
// follower of executions run elsewhere (durable-watch.ts), which settles it
// from the row once it ends.
//
// The conversation is told to the core as owned elsewhere
// (`ConversationOwned(elsewhere)`, while the store still says so); the
// core answers `FollowQueued` when messages are counted queued here, and
// their Runs follow them the same way (queue-head.ts carries it out).
//
// An execution still running here keeps its callers: its next write is
// refused by the fence, and they are told EXECUTION_REHYDRATION_REQUIRED
// at once (docs/decisions/0010), as before.
//
// Nothing durable is touched: the entries stay as they are for the
// recovery that follows if the lease comes back.

import type { AgentEntry, ExecutionEntry } from "./requests.js";
import type { Waiting } from "./run.js";

/** What the hand-over reaches (followers.ts implements it). */
export interface LostLeaseHost {
  /** The conversations with a core entry here, by id. */
  agentEntries(): readonly AgentEntry[];
  /** The executions live here of the conversation. */
  entriesOfAgent(agentId: string): readonly ExecutionEntry[];
  /** Tells the core the conversation is owned elsewhere, if the store
   * still says so. */
  leaseLost(agent: AgentEntry): void;
  /** The follower. */
  follow(executionId: string, agentId: string, waiter: Waiting): void;
}

/** Hands every caller waiting here on the conversations to the follower,
 * and tells the core (on the loop). */
export function followLostConversations(host: LostLeaseHost, agentIds: readonly string[]): void {
  for (const agentId of agentIds) {
    for (const entry of host.entriesOfAgent(agentId)) {
      if (!entry.suspended && !entry.recoveryRequired) continue;
      for (const waiter of entry.waiters.splice(0)) host.follow(entry.executionId, agentId, waiter);
    }
  }
  const lost = new Set(agentIds);
  for (const agent of host.agentEntries()) if (lost.has(agent.id)) host.leaseLost(agent);
}
