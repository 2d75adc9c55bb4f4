// How the due sweep fires one wait (docs/decisions/0076): through the
// conversation's own `resume` with the clock's answer, exactly as an
// application's `agent.resume(id, { waitId, fire: true })` would — so the
// core decides it with the same checks as any answer, and a conversation
// run by another process gets it through the approval inbox. Whether to
// fire, and whether a refused fire is thrown (the sweep tries again) or
// dropped, is the core's too (`dueFireVerdict`, docs/decisions/0102): the
// host reads the facts — closed, a handle here, the refusal's code — and
// carries the verdict out.

import { DueFireFact, DueFireVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { PhronomyError } from "../errors.js";
import type { DueWait } from "../store/due-waits.js";
import type { Logger, ResumeDecision } from "./options.js";

/** What firing needs: a handle on a conversation defined here. */
export interface DueFireHost {
  readonly logger: Logger;
  readonly core: Pick<ControlCore, "dueFireVerdict">;
  closed(): boolean;
  agentHandle(agentId: string): { resume(executionId: string, decision: ResumeDecision): { readonly executionId: Promise<string> } } | undefined;
}

/** Fires the wait; resolves once committed, filed, refused or not this
 * process's to fire; rejects when the store failed (tried again). */
export async function fireDueWait(host: DueFireHost, wait: DueWait): Promise<void> {
  // No handle is asked for once closed: the core skips it whatever it is.
  const agent = host.closed() ? undefined : host.agentHandle(wait.agentId);
  const here = agent !== undefined ? DueFireFact.DefinedHere : 0;
  // Skipped (closed, or a conversation of a definition not made here yet:
  // its recovery, once defined, reports the suspension and the sweep
  // comes back).
  if (agent === undefined || verdictOf(host, here) !== DueFireVerdict.Fire) return;
  try {
    await agent.resume(wait.executionId, { waitId: wait.waitId, fire: true }).executionId;
  } catch (error) {
    const storeFailed = error instanceof PhronomyError && error.code === "STORE" ? DueFireFact.StoreFailed : 0;
    if (verdictOf(host, here | DueFireFact.Refused | storeFailed) === DueFireVerdict.TryAgain) throw error;
    // Dropped: answered already (fired twice, by hand, in another
    // process), ended (cancelled), or the environment closing.
    host.logger.debug?.(
      `[phronomy] the due wait ${wait.waitId} of execution ${wait.executionId} was not fired: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

function verdictOf(host: DueFireHost, facts: number): DueFireVerdict {
  return host.core.dueFireVerdict(facts | (host.closed() ? DueFireFact.Closed : 0)) as DueFireVerdict;
}
