// The one admission decision (docs/decisions/0062): a start made here, one
// filed for this process and the head of a conversation's durable queue
// each ask the core `Admit(source, busy policy, facts)` — the facts the
// host reads: the store keeps a queue, a start can be filed for the owner —
// and the core answers where it goes — run here, enqueue at the back or the
// front (and interrupt), file for the owner, refuse busy / held / closed /
// no queue / owned elsewhere, wait, stay queued, leave filed — from
// the conversation's phase, the admission an execution holds and the
// messages it counts queued. Nothing here chooses: this file asks and reads
// the answer; `conversation-queue.ts` carries it out.

import { AdmissionFact, AdmissionVerdict, BusyPolicy, EffectKind, MessageKind as M, type AdmissionSource } from "../../assembly/abi.js";
import type { Coordinator } from "./coordinator.js";
import type { OnBusyPolicy } from "./options.js";
import type { StartRequest } from "./requests.js";

/** The core's answer to `Admit`, with the request's handle: still in the
 * request table (`Start` takes it; any other verdict takes it out). */
export interface Admission {
  readonly handle: number;
  readonly verdict: AdmissionVerdict;
  /** `EnqueueFront` while an execution holds the admission: it is
   * cancelled once the message is queued. */
  readonly interrupt: boolean;
}

const POLICIES: Readonly<Record<OnBusyPolicy, BusyPolicy>> = {
  reject: BusyPolicy.Reject,
  enqueue: BusyPolicy.Enqueue,
  interrupt: BusyPolicy.Interrupt,
};

/** The store's and this process's facts `Admit` reads (its argument `f`). */
export interface AdmissionFacts {
  /** The store keeps a durable queue. */
  readonly queueKept: boolean;
  /** A start made here can be filed for the conversation's owner. */
  readonly canFile: boolean;
  /** The store may move the conversation here (`takeIdleHere`, docs/decisions/0101). */
  readonly canTakeHere?: boolean;
}

/** Asks the core where the start goes (on the loop). Undefined when the
 * core refused the question (a stale agent handle): its `FailRequest` told
 * the request's waiter, as a refused `Start` would. */
export function admit(
  coordinator: Coordinator,
  request: StartRequest,
  source: AdmissionSource,
  policy: OnBusyPolicy,
  facts: AdmissionFacts,
  waiting = 0,
): Admission | undefined {
  const { agent } = request;
  // A store fact the core may not have yet: a takeover noted, its message
  // still on its way to the loop.
  coordinator.beforeAdmit?.(agent);
  const handle = coordinator.requests.add(request);
  const bits =
    (facts.queueKept ? AdmissionFact.QueueKept : 0)
    | (facts.canFile ? AdmissionFact.CanFile : 0)
    | (facts.canTakeHere === true ? AdmissionFact.CanTakeHere : 0);
  coordinator.apply(M.Admit, agent.slot, agent.generation, handle, source, POLICIES[policy], bits, waiting);
  const { core } = coordinator.settings;
  // The answer is the apply's only effect; carrying it out applied nothing.
  if (core.effectCount === 0 || core.effectWord(0, 0) !== EffectKind.AdmissionDecided) return undefined;
  return { handle, verdict: core.effectWord(0, 2) as AdmissionVerdict, interrupt: core.effectWord(0, 4) === 1 };
}
