// A second message to a busy conversation (docs/decisions/0025-busy-conversations.md).
// An agent id is a conversation and admits one execution at a time; the
// core decides that (its admission table refuses a `Start` with
// AgentAlreadyAdmitted). What happens to the refused start is its busy
// policy — the start's `onBusy`, else its agent's, else "reject":
//
// * "reject": AgentBusyError, as always.
// * "enqueue": the message is written to the conversation's durable queue
//   (`host/store/queue.ts`) under the execution id it will run as; the Run's
//   `executionId` resolves once it is written. When the conversation's
//   admission is released (its execution ended), the core answers
//   `StartHead` and the head is started through it like any start — the
//   core still decides (`Admit`) — and runs
//   under its queued id; its preparation removes it from the queue in the
//   same transaction. A suspended execution keeps the admission, so the
//   queue waits for its decision.
// * "interrupt": as "enqueue", at the head, and the running execution is
//   cancelled: a running session ends `cancelled` once its in-flight work
//   settled (as its signal would); a suspended one is declined and
//   cancelled in the same decision (its timeline says so).
//
// While a conversation has messages queued, every new start goes behind
// them (or is refused, with "reject"): order is the order of `start` calls.
// The durable order is that order too: the SQLite store commits writes in
// the order submitted; on PostgreSQL one conversation's queue writes are
// sent one at a time.
//
// This file is the queues' face: a start's admission and its busy
// refusal. The rest lives beside it: what the queues hold
// (queue-state.ts), the write path (queue-enqueue.ts), the head
// (queue-head.ts), cancels (queue-cancel.ts), reading the store's queue
// back (queue-restore.ts), the durable order (queue-order.ts), and small
// pure words (queue-words.ts).

import { AdmissionSource, AdmissionVerdict, MessageKind as M, Ownership, ResultCode } from "../../assembly/abi.js";
import { AgentBusyError, PhronomyError, RuntimeShutdownError } from "../errors.js";
import { admit, type Admission, type AdmissionFacts } from "./admission.js";
import { settleWaiterWithError } from "./delivery.js";
import type { OnBusyPolicy } from "./options.js";
import type { AgentEntry, StartRequest } from "./requests.js";
import type { Waiter } from "./run.js";
import { cancelAborted, cancelQueued } from "./queue-cancel.js";
import { enqueue } from "./queue-enqueue.js";
import { followQueued, headDue, headFailed, headKept, headLeft, headTaken, retryHeadAfter, tellIfHeldElsewhere } from "./queue-head.js";
import { cancelDurablyOnFailure, restore } from "./queue-restore.js";
import { QueueState, type ConversationQueueHost } from "./queue-state.js";
import { busyPolicyOf, noQueueError, refusal } from "./queue-words.js";
import { ReadinessWaiters } from "./readiness-waiters.js";
import type { RemoteStarts, StartPlacement } from "./remote-start.js";
import { observerFollows } from "./enqueue-refusal.js";

export { INTERRUPT_REASON, type ConversationQueueHost } from "./queue-state.js";

/** What a start the core answered with a placement verdict needs to be
 * asked again (`ConversationQueues.placeElsewhere`). */
interface PlacementRetry {
  readonly source: AdmissionSource.Direct | AdmissionSource.Filed;
  readonly aborted: boolean;
  readonly retry: () => void;
  readonly file: (inbox: RemoteStarts) => void;
  readonly told: boolean;
}

/** Verdicts for a conversation owned elsewhere (`placeElsewhere`). */
const PLACED_ELSEWHERE: ReadonlySet<AdmissionVerdict> = new Set([
  AdmissionVerdict.FileForOwner,
  AdmissionVerdict.TakeHere,
  AdmissionVerdict.LeaveFiled,
  AdmissionVerdict.RefuseOwnedElsewhere,
]);

export class ConversationQueues {
  /** The queues' messages and heads: the paths of queue-*.ts share it. */
  private readonly state: QueueState;
  /** Starts the core answered `WaitUntilReady`. */
  private readonly readiness = new ReadinessWaiters();

  constructor(environment: ConversationQueueHost) {
    this.state = new QueueState(environment, {
      cancelAborted: (item) => cancelAborted(this.state, item),
      cancelDurablyOnFailure: (item) => cancelDurablyOnFailure(this.state, item),
    });
  }

  /** The busy policy of a start. */
  static policyOf(request: StartRequest): OnBusyPolicy {
    return busyPolicyOf(request);
  }

  /** On the loop: a start made here (or filed for this process) asks the
   * core where it goes (docs/decisions/0062), and goes there. `retry`
   * posts it again: called once the core changed the conversation's
   * phase, when it answered `WaitUntilReady`. `file` files it for the
   * process that holds the conversation (`FileForOwner`). `told`: this
   * start already told the core a store fact its phase missed (once). */
  admitStart(
    request: StartRequest,
    source: AdmissionSource.Direct | AdmissionSource.Filed,
    aborted: boolean,
    retry: () => void,
    file: (inbox: RemoteStarts) => void,
    told = false,
  ): void {
    const { coordinator } = this.state.environment;
    // A store fact the core may not have yet — the lease lost, its signal
    // still on its way to the loop — is reported first (as every place
    // that learns it does: `tellIfHeldElsewhere`), so `Admit` answers from
    // it: the start is filed for the holder, not refused by the store.
    if (!told) tellIfHeldElsewhere(this.state, request.agent);
    const policy = busyPolicyOf(request);
    const { agent } = request;
    const placement = this.state.environment.placementOf(agent.id);
    const waiting = this.readiness.waitingOn(agent.slot);
    const admission = admit(coordinator, request, source, policy, this.factsOf(placement, request), waiting);
    if (admission === undefined) return;
    // A filed start's fate in the inbox follows the core's last verdict.
    if (request.filed !== undefined) request.filed.verdict = admission.verdict;
    if (PLACED_ELSEWHERE.has(admission.verdict)) return this.placeElsewhere(request, admission, placement, { source, aborted, retry, file, told });
    if (admission.verdict === AdmissionVerdict.RunHere) {
      coordinator.apply(M.Start, agent.slot, agent.generation, admission.handle, aborted ? 1 : 0);
      return;
    }
    coordinator.requests.take(admission.handle);
    if (admission.verdict === AdmissionVerdict.EnqueueBack || admission.verdict === AdmissionVerdict.EnqueueFront) {
      return enqueue(this.state, request, admission.verdict === AdmissionVerdict.EnqueueFront, admission.interrupt);
    }
    this.refuseOrWait(request, admission.verdict, policy, retry);
  }

  /** On the loop: `env.retry` asks the core `Admit` as a start of this
   * process with the busy policy "reject" (source `Retry`): `install`
   * runs it here (its `RecoveryInstall`, in the same turn), `elsewhere`
   * when the conversation is owned elsewhere (the retry is filed for the
   * owner, or refused). A busy, held or closed conversation refuses it as
   * a start's; one registering or recovering makes it wait (`retry`
   * posts it again once the core changed its phase). */
  admitRetry(request: StartRequest, retry: () => void, install: () => void, elsewhere: () => void): void {
    const { coordinator } = this.state.environment;
    tellIfHeldElsewhere(this.state, request.agent);
    const waiting = this.readiness.waitingOn(request.agent.slot);
    const admission = admit(coordinator, request, AdmissionSource.Retry, "reject", this.factsOf(this.state.environment.placementOf(request.agent.id)), waiting);
    if (admission === undefined) return;
    coordinator.requests.take(admission.handle);
    if (admission.verdict === AdmissionVerdict.RunHere) return install();
    // Owned elsewhere: the retry's own lookup files it in the approval
    // inbox for the holder, or refuses it naming the holder (retry.ts).
    if (admission.verdict === AdmissionVerdict.FileForOwner || admission.verdict === AdmissionVerdict.RefuseOwnedElsewhere) return elsewhere();
    this.refuseOrWait(request, admission.verdict, "reject", retry);
  }

  /** What `Admit` is told besides the start: the store keeps a queue; a
   * start made here can be filed for the conversation's owner. */
  private factsOf(placement: StartPlacement, request?: StartRequest): AdmissionFacts {
    const canTakeHere = placement.takeHere !== undefined && request !== undefined && request.takeHereAsked !== true;
    return { queueKept: this.state.store() !== undefined, canFile: placement.inbox !== undefined, canTakeHere };
  }

  /** A verdict that neither runs the start here nor places it: it waits
   * for the conversation to be ready, or is refused as the core said. */
  private refuseOrWait(request: StartRequest, verdict: AdmissionVerdict, policy: OnBusyPolicy, retry: () => void): void {
    const { agent } = request;
    switch (verdict) {
      case AdmissionVerdict.WaitUntilReady:
        return this.waitUntilReady(request, retry);
      case AdmissionVerdict.RefuseBusy:
        return this.refuseBusy(request);
      case AdmissionVerdict.RefuseHeld:
        return settleWaiterWithError(request.waiter, AgentBusyError.heldForRecovery(agent.id), this.state.settings);
      case AdmissionVerdict.RefuseNoQueue:
        return settleWaiterWithError(request.waiter, noQueueError(agent.id, policy), this.state.settings);
      case AdmissionVerdict.RefuseClosed:
        return settleWaiterWithError(request.waiter, refusal(request, ResultCode.AgentClosed), this.state.settings);
      default:
        return settleWaiterWithError(
          request.waiter,
          new PhronomyError("INTERNAL", `phronomy core: Admit answered verdict ${verdict} for a start of agent "${agent.id}"`, { agentId: agent.id }),
          this.state.settings,
        );
    }
  }

  /** The core records the conversation owned elsewhere: `FileForOwner`
   * (a start made here that can be filed), `RefuseOwnedElsewhere` (one
   * that cannot: no start inbox, a process that takes no share, the
   * partition lapsed here) or `LeaveFiled` (one filed for this process).
   * The host carries the verdict out with the store's facts (read before
   * `Admit`):
   *
   * * the store says this process holds it: the core's phase is stale (a
   *   takeover or retake not reported yet). Told it is retaken
   *   (`ConversationRetaken`: the core answers `RecoveryDue(Retake)`, asked
   *   through the one pipeline, joined by the takeover's if one is on its
   *   way) and owned here (`ConversationOwned(here)`), and asked again,
   *   once: the core then answers as for a conversation being registered
   *   here — the start waits for that recovery, then runs here.
   * * `LeaveFiled`: the filed start stays for the process that holds the
   *   conversation; the inbox reads the verdict (`request.filed`) and
   *   records nothing (filed-start-fate.ts).
   * * `FileForOwner`: filed for that process.
   * * `RefuseOwnedElsewhere`: refused with the store's own lease refusal
   *   (AGENT_BUSY, lease_not_held, the owner named). */
  private placeElsewhere(request: StartRequest, admission: Admission, placement: StartPlacement, again: PlacementRetry): void {
    const { coordinator } = this.state.environment;
    const { agent } = request;
    // Told already, and still owned elsewhere in the core (its message
    // dropped): the store holds it here, and its lease check judges `Start`.
    // A start whose signal was aborted already is refused by the core's
    // `Start` (StartCancelled), as before, not as owned elsewhere.
    const refused = admission.verdict === AdmissionVerdict.RefuseOwnedElsewhere && !placement.heldHere;
    if ((placement.heldHere && again.told) || (refused && again.aborted)) {
      coordinator.apply(M.Start, agent.slot, agent.generation, admission.handle, again.aborted ? 1 : 0);
      return;
    }
    coordinator.requests.take(admission.handle);
    if (placement.heldHere) {
      // Reported as a retake first, while the core still records it owned
      // elsewhere: the core answers that its recovery is due.
      this.state.environment.takenBack(agent);
      coordinator.apply(M.ConversationOwned, agent.slot, agent.generation, Ownership.Here);
      return this.admitStart(request, again.source, again.aborted, again.retry, again.file, true);
    }
    if (admission.verdict === AdmissionVerdict.TakeHere && placement.takeHere !== undefined) {
      // Asked once: moved, the placement read again says it is held here
      // (the retake above); refused, `Admit` files it (docs/decisions/0101).
      request.takeHereAsked = true;
      void placement.takeHere().then(again.retry, again.retry);
      return;
    }
    if (admission.verdict === AdmissionVerdict.LeaveFiled) {
      return settleWaiterWithError(request.waiter, AgentBusyError.ownedElsewhere(agent.id), this.state.settings);
    }
    if (admission.verdict === AdmissionVerdict.FileForOwner && placement.inbox !== undefined) return again.file(placement.inbox);
    settleWaiterWithError(request.waiter, placement.refusal(), this.state.settings);
  }

  /** The conversation is registering or recovering: the start waits for
   * the core's `ReadinessChanged` (ready, held, owned elsewhere, closed),
   * then asks again (`readiness-waiters.ts`). */
  private waitUntilReady(request: StartRequest, retry: () => void): void {
    if (this.state.closed) return settleWaiterWithError(request.waiter, shutdownOf(request), this.state.settings);
    // Bounded by the core: past `Limit.WaitingStartsMax` it answers `RefuseHeld`.
    this.readiness.wait(request.agent, request.waiter, retry);
  }

  /** Starts waiting for their conversation to be ready (for tests). */
  waitingStarts(): number {
    return this.readiness.count();
  }

  /** The core changed the phase of the conversation in `slot` (on the
   * loop, inside the apply): the starts waiting on it ask again. */
  conversationChanged(slot: number): void {
    this.readiness.phaseChanged(slot);
  }

  /** The core opened the conversation (`OpenAdmissions`: ready after a
   * recovery): starts waiting on it ask again. Its queue's head, which
   * stayed queued meanwhile, is offered by the core's `StartHead` that
   * follows in the same apply when it is due (or after `RestoreQueue`). */
  admissionsOpened(agent: AgentEntry): void {
    this.readiness.phaseChanged(agent.slot);
  }

  /** "reject" while busy: AgentBusyError, saying how many messages wait. */
  private refuseBusy(request: StartRequest): void {
    const queued = this.state.conversations.get(request.agent.id)?.items.length ?? 0;
    if (queued === 0) return settleWaiterWithError(request.waiter, refusal(request, ResultCode.AgentAlreadyAdmitted), this.state.settings);
    settleWaiterWithError(
      request.waiter,
      new AgentBusyError(
        request.agent.id,
        `agent "${request.agent.id}" is busy: it runs an execution and ${queued} message(s) are queued behind it; start with onBusy "enqueue" to queue this one too, or wait`,
        { queued },
      ),
      this.state.settings,
    );
  }

  /** Whether a message of this id is queued (or being queued, or started
   * from the queue) here. */
  holds(executionId: string): boolean {
    return this.state.items.has(executionId) || this.state.starting.has(executionId);
  }

  /** `env.wait` on a queued message: settled with its outcome. */
  observe(executionId: string, observer: Waiter): boolean {
    const item = this.state.items.get(executionId);
    if (item === undefined) return false;
    if (item.elsewhere === true) {
      this.state.environment.followElsewhere(item.agent.id, executionId, observer);
      return true;
    }
    // Its id is known once its enqueue committed (as its own Run's): a
    // filed start following it is settled `ran` on that, and an enqueue the
    // store then refuses (its lease lost) wrote nothing (seed 778664).
    item.waiter.executionId.then(
      (id) => observer.knowExecutionId(id),
      () => undefined,
    );
    item.waiter.result.then(
      (result) => observer.resolve(result),
      (error: Error) => {
        // Its enqueue refused because the id is an execution already (a
        // second start of a key): that execution is the one to follow
        // (docs/decisions/0063, found 19); the item is forgotten by now.
        // The core decides (`enqueueRefusalVerdict`, decision 0110).
        if (observerFollows(this.state.settings.core, error)) return this.state.environment.followExecution(item.agent.id, executionId, observer);
        observer.reject(error);
      },
    );
    return true;
  }

  /** The environment closes: queued messages stay durable (the next
   * process runs them); their Runs here are told. */
  close(): void {
    this.state.closed = true;
    for (const item of this.state.items.values()) {
      const details = { executionId: item.executionId, agentId: item.agent.id };
      // A cancel not settled yet — waiting on its enqueue's answer (posted
      // to a closed loop, never applied) or on its own write: told now;
      // whether it was cancelled is the next process's to read.
      item.onClosed?.(new RuntimeShutdownError(`the cancel of queued message ${item.executionId}`, details));
      settleWaiterWithError(item.waiter, new RuntimeShutdownError(`the wait for queued message ${item.executionId}`, details), this.state.settings);
    }
    this.state.items.clear();
    this.state.conversations.clear();
    for (const start of this.readiness.takeAll()) settleWaiterWithError(start.waiter, shutdownOf(start), this.state.settings);
  }

  /** Where the core's count of queued messages differs from this queue's
   * (for tests: the simulation checks it after every step). Empty while
   * they agree, and once closed (the core is not told of a close). */
  countDrift(): string[] {
    if (this.state.closed) return [];
    const drift: string[] = [];
    const { coordinator } = this.state.environment;
    for (const entry of coordinator.agentEntries()) {
      const items = this.state.conversations.get(entry.id)?.items.filter((item) => item.agent === entry) ?? [];
      const counted = coordinator.settings.core.conversation(entry.slot).queued;
      if (counted !== items.length) drift.push(`conversation "${entry.id}": ${items.length} message(s) queued here, ${counted} counted by the core`);
    }
    return drift;
  }

  /** A start ended by its preparation: a queue head's end is told to the
   * core, which keeps it or lets it go (queue-head.ts). */
  headFailed(request: StartRequest, error: PhronomyError): boolean {
    return headFailed(this.state, request, error);
  }

  /** Effect HeadKept: the head is put back at the front (queue-head.ts). */
  headKept(agent: AgentEntry): void {
    headKept(this.state, agent);
  }

  /** Effect HeadTaken: the head's Run follows its execution elsewhere (queue-head.ts). */
  headTaken(agent: AgentEntry): void {
    headTaken(this.state, agent);
  }

  /** A start ended its preparation or was refused (queue-head.ts). */
  headLeft(request: StartRequest): false {
    return headLeft(this.state, request);
  }

  /** The store said this process lost the conversation's lease (on the
   * loop): told to the core if the store still says so — a lease taken
   * back since is the takeover's to report (queue-head.ts). */
  leaseLost(agent: AgentEntry): void {
    tellIfHeldElsewhere(this.state, agent);
  }

  /** Effect FollowQueued: the Runs of the messages queued here follow them
   * to the process that holds the conversation (queue-head.ts). */
  followQueued(agent: AgentEntry | undefined): void {
    followQueued(this.state, agent);
  }

  /** The core's `StartHead`: the conversation's head is started next (queue-head.ts). */
  startHead(agent: AgentEntry): void {
    headDue(this.state, agent);
  }

  /** The core's `RetryHeadAfter`: `HeadRetryDue` once the backoff is over (queue-head.ts). */
  retryHeadAfter(agent: AgentEntry, delayMs: number): void {
    retryHeadAfter(this.state, agent, delayMs);
  }

  /** Cancels a queued message by its execution id (queue-cancel.ts): true
   * when it was queued; false when there is no such queued message. */
  cancelQueued(executionId: string, reason?: string): Promise<boolean> {
    return cancelQueued(this.state, executionId, reason);
  }

  /** After the agent's executions were recovered: its durable queue is
   * read and counted; the core offers its head when due (queue-restore.ts). */
  restore(agent: AgentEntry): Promise<void> {
    return restore(this.state, agent);
  }
}

/** A start told the environment closed while it waited for its conversation. */
function shutdownOf(request: { readonly agent: AgentEntry }): RuntimeShutdownError {
  return new RuntimeShutdownError(`a start of agent "${request.agent.id}" waiting for its conversation to be recovered`, { agentId: request.agent.id });
}
