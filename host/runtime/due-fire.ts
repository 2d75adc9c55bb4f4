// How the due sweep fires one wait (docs/decisions/0076): through the
// conversation's own `resume` with the clock's answer, exactly as an
// application's `agent.resume(id, { waitId, fire: true })` would — so the
// core decides it with the same checks as any answer, and a conversation
// run by another process gets it through the approval inbox.

import { PhronomyError } from "../errors.js";
import type { DueWait } from "../store/due-waits.js";
import type { Logger, ResumeDecision } from "./options.js";

/** What firing needs: a handle on a conversation defined here. */
export interface DueFireHost {
  readonly logger: Logger;
  closed(): boolean;
  agentHandle(agentId: string): { resume(executionId: string, decision: ResumeDecision): { readonly executionId: Promise<string> } } | undefined;
}

/** Fires the wait; resolves once committed, filed, refused or not this
 * process's to fire; rejects when the store failed (tried again). */
export async function fireDueWait(host: DueFireHost, wait: DueWait): Promise<void> {
  if (host.closed()) return;
  // A conversation of a definition not made here (yet): its recovery,
  // once defined, reports the suspension and the sweep comes back.
  const agent = host.agentHandle(wait.agentId);
  if (agent === undefined) return;
  try {
    await agent.resume(wait.executionId, { waitId: wait.waitId, fire: true }).executionId;
  } catch (error) {
    if (error instanceof PhronomyError && error.code === "STORE" && !host.closed()) throw error;
    // Answered already (fired twice, by hand, in another process), ended
    // (cancelled), or the environment closing: nothing left to fire.
    host.logger.debug?.(
      `[phronomy] the due wait ${wait.waitId} of execution ${wait.executionId} was not fired: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
