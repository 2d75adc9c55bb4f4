// The coordinator: the host side of the control loop. It applies control
// messages to the core and carries out the effects the core answers with —
// submitting store operations, starting sessions, delivering outcomes — in
// the order the core wrote them. It never changes live state on its own
// judgement: admission, revisions, sessions, phases and quiescence are the
// core's, and every completion comes back as a message.
//
// Re-entrancy: effects never apply a message synchronously, except to
// report a submission the offload refused on the spot (SPEC §3: the flow
// unwinds at once); everything else is posted to the loop.

import { EffectKind, MessageKind as M, OutcomeType, RecoveryScope, SessionEnding, SessionEventKind } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { effectKindName, messageKindName, resultCodeName } from "../core/names.js";
import type { CoreEffect } from "../core/effects.js";
import { CoreFailureError, ExecutionRehydrationRequiredError, OffloadFullError, PhronomyError } from "../errors.js";
import { errorFromRecord } from "../error-records.js";
import type { ExecutionRow } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";
import type { ControlLoop, PostOptions } from "./control-loop.js";
import { errorForCode } from "./error-codes.js";
import type { ApprovalRequest, ExecutionEvent } from "./events.js";
import type { CallbackErrorPolicy, Logger } from "./options.js";
import { ExecutionEntry, RequestTable, type AgentEntry, type PendingRequest, type RecoveryRequest, type StartRequest } from "./requests.js";
import { attachFollowers, followResume } from "./resume-followers.js";
import { resumeRefused, waitBeforeResume } from "./resume-waits.js";
import { cancelRefused, submitCancelCommit } from "./cancel-commit.js";
import type { CoordinatorCalls } from "./coordinator-calls.js";
import { reopenInstalled } from "./retry.js";
import { deliverOutcome, emitToEntry, emitToWaiter, settleWaiterWithError } from "./delivery.js";
import { Session, type SessionHost } from "./session.js";
import type { Tracer } from "./tracing.js";
import { submitPrepare } from "./execution-preparation.js";
import { placeRefusedStart } from "./refused-start.js";
import { continueSession, resumeSession, sessionOf, startSession } from "./execution-sessions.js";
import { submitApprovalCommit, submitProviderBarrier, submitTerminalCommit, submitToolBarrier } from "./execution-writes.js";
import { failAllLive, failWaiters, holdForRecovery, releaseWaitersAtClose, setupFailed } from "./execution-failures.js";
import type { BusyHooks } from "./busy-hooks.js";
import { DormantExecutions } from "./dormant-executions.js";
import { letGo, restoreSuspension, wake, type RehydrationHost } from "./rehydration.js";

export interface CoordinatorSettings {
  readonly core: ControlCore;
  readonly loop: ControlLoop;
  readonly store: ExecutionStore;
  readonly logger: Logger;
  readonly callbackErrorPolicy: CallbackErrorPolicy;
  readonly tracer: Tracer;
  readonly now: () => number;
}

export class Coordinator implements SessionHost, CoordinatorCalls, RehydrationHost {
  readonly requests = new RequestTable();
  /** Suspended executions let go of here: the core's record and an index
   * entry each (docs/decisions/0066, rehydration.ts). */
  readonly dormant = new DormantExecutions();
  /** The execution entries with an object here, by slot: one let go of
   * at rest has none (a Map, not an array: a million of them at rest
   * would each keep an array element, docs/decisions/0092). */
  private readonly executions = new Map<number, ExecutionEntry>();
  private readonly executionIds = new Map<string, ExecutionEntry>();
  /** The agent entries with a record here, by slot; a conversation at
   * rest has none (`agentMissing` rebuilds it, docs/decisions/0092). */
  private readonly agentsBySlot = new Map<number, AgentEntry>();

  /** When each agent slot with a record here last had an execution
   * released here (`performance.now()`; none: never since it was
   * registered): rows of it read before then may be stale. By slot, not by
   * record: a record let go of at rest and rebuilt is another object. A
   * conversation at rest keeps its time in its arena record instead
   * (`forgetAgentEntry` hands it over, `restoreAgentEntry` takes it back,
   * docs/decisions/0100): a slot at rest costs nothing here. */
  private readonly lastReleases = new Map<number, number>();

  /** The agent entry of a slot with no record here: the conversation at
   * rest there, rebuilt (conversations.ts). */
  agentMissing: ((slot: number) => AgentEntry | undefined) | undefined;
  /** The agent entry of a conversation by id, rebuilt if it is at rest
   * (conversations.ts); undefined when it has none here. */
  agentNamed: ((agentId: string) => AgentEntry | undefined) | undefined;
  /** An execution was let go of at rest (rehydration.ts): its
   * conversation may be let go of too (conversations.ts). */
  onExecutionLetGo: ((agent: AgentEntry) => void) | undefined;

  /** Called after every apply; the environment checks for drained here. */
  onIdle: (() => void) | undefined;
  /** An agent's execution suspended (live or recovered): the
   * conversations' bookkeeping (`conversations.ts`) listens. */
  onAgentSuspended: ((agent: AgentEntry) => void) | undefined;
  /** An event wait suspended here: a signal stored for its key is offered (event-signals.ts). */
  onEventWait: ((request: ApprovalRequest) => void) | undefined;
  /** A wait for a child execution is committed or reinstalled here (environment.ts: child-executions.ts). */
  onChildWait: ((entry: ExecutionEntry) => void) | undefined;
  /** A wait with a due time suspended here (committed or recovered): the
   * due sweep arms for it (due-sweep.ts, docs/decisions/0076). */
  onWaitDue: ((dueAt: number) => void) | undefined;
  /** The core's `OpenInbox` and `CloseInbox`: the approval inbox's applier (inbox-claims.ts). */
  inbox: { inboxOpened(agentId: string, drain: boolean): void; inboxClosed(agentId: string): void } | undefined;
  /** The core's `ReleaseConversation`: the conversation is idle and its
   * entry is let go (`conversations.ts`, posted to the loop). */
  onConversationIdle: ((agent: AgentEntry) => void) | undefined;
  /** The core's `FollowAdmitted`: a parked execution's callers follow it elsewhere (followers.ts). */
  onFollowAdmitted: ((entry: ExecutionEntry | undefined, generation: number) => void) | undefined;
  /** The core's `RetryAfter`: a held conversation is recovered again after
   * the core's delay (recovery-pipeline.ts, the one place it is carried out). */
  onRetryAfter: ((agent: AgentEntry, epoch: number, delayMs: number) => void) | undefined;

  /** An execution was held recovery_required (a write refused or its
   * outcome unknown), with the error that did it: the environment recovers
   * at once one whose lease it has taken back meanwhile (fenced writes). */
  onExecutionRecoveryRequired: ((agentId: string, error: PhronomyError) => void) | undefined;
  /** An agent was held recovery_required with no execution (a
   * preparation whose outcome could not be read back). */
  onAgentRecoveryRequired: ((agentId: string) => void) | undefined;
  /** The conversation queues (`conversation-queue.ts`). */
  busyHooks: BusyHooks | undefined;
  /** Before every `Admit` (admission.ts): a takeover the store noted is
   * told to the core first, if its message has not come yet (agent-recoveries.ts). */
  beforeAdmit: ((agent: AgentEntry) => void) | undefined;

  constructor(readonly settings: CoordinatorSettings) {}

  /** Nothing admitted is still working: no request waits on the core and
   * every live execution is suspended (durable, waiting for approval) or
   * left for recovery (its session abandoned). */
  get drained(): boolean {
    if (this.requests.size > 0) return false;
    for (const entry of this.executionIds.values()) if (!entry.suspended && !this.heldForRecovery(entry)) return false;
    return true;
  }

  /** The conversations of the executions running here (admitted, neither
   * suspended nor left for recovery). */
  *runningAgentIds(): Iterable<string> {
    for (const entry of this.executionIds.values()) if (!entry.suspended && !this.heldForRecovery(entry)) yield entry.agent.id;
  }

  /** A start of this execution id refused busy meets the one being
   * prepared here under the same id (an idempotency key, or a filed start,
   * sent twice at once): resolves true once that one is admitted, false if
   * it is refused; when none is, or that one ends before it is installed
   * (its input blocked: written terminal), whether `rowExists` finds the
   * id's row (docs/decisions/0057). */
  admittedAs(executionId: string, rowExists: () => Promise<boolean>): Promise<boolean> {
    if (this.hasExecution(executionId)) return Promise.resolve(true);
    const starting = this.requests.startingAs(executionId);
    if (starting === undefined) return rowExists();
    return starting.waiter.executionId.then(
      () => true,
      () => rowExists(),
    );
  }

  /** Whether an execution of the agent was released here at or after
   * `since` (`performance.now()`): one live here when its rows were read
   * then may have ended since, and its row read then is stale. */
  releasedSince(agent: AgentEntry, since: number): boolean {
    const at = this.lastReleases.get(agent.slot);
    return at !== undefined && at >= since;
  }

  /** The execution is held recovery_required (its session abandoned,
   * recovery owns it): the core's state, asked, never copied here. An
   * entry released meanwhile is not (its slot may be another's now). */
  heldForRecovery(entry: ExecutionEntry): boolean {
    return this.executions.get(entry.slot) === entry && this.settings.core.executionHeldForRecovery(entry.slot);
  }

  /** The executions held recovery_required here; only the agent's when given. */
  recoveryRequiredEntriesOf(agent?: AgentEntry): ExecutionEntry[] {
    return [...this.executionIds.values()].filter((entry) => (agent === undefined || entry.agent === agent) && this.heldForRecovery(entry));
  }

  /** On close: executions suspended for approval stay durable; their local
   * waiters learn that this environment will not see them end. Those let
   * go of are rebuilt first (their Runs' tails). */
  releaseSuspendedWaiters(): void {
    for (const slot of this.dormant.allSlots()) wake(this, slot, false);
    this.dormant.close();
    releaseWaitersAtClose(this.executionIds.values(), this.settings);
  }

  /** The core trapped (docs/decisions/0023): no effect will come for
   * anything live, so every pending request and every live execution's
   * waiters fail with the trap (execution-failures.ts), and the side
   * tables empty (the environment is drained). Nothing is written: the
   * store's rows are recovered by the next environment. */
  failEverything(error: PhronomyError): void {
    for (const slot of this.dormant.allSlots()) wake(this, slot, false);
    this.dormant.close();
    failAllLive(this.requests.takeAll(), this.executionIds.values(), error, this.settings);
    this.executionIds.clear();
    this.executions.clear();
  }

  // -- applying messages -------------------------------------------------------------

  /** Applies one message on the loop and carries out its effects. */
  apply(kind: number, a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0): number {
    const { core } = this.settings;
    const code = core.apply(kind, a, b, c, d, e, f, g);
    if (core.effectCount === 0) return code;
    // Copy first: carrying an effect out may apply another message.
    const effects = core.effects();
    for (const effect of effects) this.carryOutOrFail(effect);
    this.onIdle?.();
    return code;
  }

  /** Carries one effect out. A throw while carrying out an effect of a
   * running execution (an application's tracer, model object or store
   * throwing where nothing expected it) fails that execution's session:
   * the host proposes the failure and the core decides the terminal, as
   * for any failed operation (decision 0056). It used to reach the loop,
   * which only logged it: the execution stayed pending for good. A throw
   * no running session owns is still the loop's to report. */
  private carryOutOrFail(effect: CoreEffect): void {
    try {
      this.carryOut(effect);
    } catch (error) {
      if (error instanceof CoreFailureError || !this.failEffectOwner(effect, error)) throw error;
    }
  }

  private failEffectOwner(effect: CoreEffect, error: unknown): boolean {
    const entry = "execution" in effect ? this.executions.get(effect.execution) : undefined;
    const session = entry?.session;
    if (!entry || !session || session.finished) return false;
    // The model call is launched as startModelCall's last statement: a
    // throw before it means the call the core counts in flight never began.
    if (effect.kind === EffectKind.StartProviderCall) this.operationSettled(session);
    const name = effectKindName(effect.kind);
    const message =
      `execution ${entry.executionId}: carrying out its ${name} failed: ${error instanceof Error ? error.message : String(error)}; `
      + "the run ended failed. Fix what threw (see the cause: a tracer, a model or store object of the application), then start it again";
    session.fail(new PhronomyError("INTERNAL", message, { agentId: entry.agent.id, executionId: entry.executionId, cause: error, details: { effect: name } }));
    return true;
  }

  /** Queues a message for the loop. */
  post(message: () => void): void {
    this.settings.loop.post(message, completionPost);
  }

  /** A conversation registered in the core (`RegisterAgent`): no
   * execution of this registration was released yet. */
  registerAgentEntry(entry: AgentEntry): void {
    this.agentsBySlot.set(entry.slot, entry);
    this.lastReleases.delete(entry.slot);
  }

  /** A conversation let go of at rest, rebuilt (the same registration),
   * with the release time `forgetAgentEntry` gave when it was let go of. */
  restoreAgentEntry(entry: AgentEntry, releasedAt: number | undefined): void {
    this.agentsBySlot.set(entry.slot, entry);
    if (releasedAt === undefined) this.lastReleases.delete(entry.slot);
    else this.lastReleases.set(entry.slot, releasedAt);
  }

  /** The agents with a record here now (not those at rest). */
  agentEntries(): AgentEntry[] {
    return [...this.agentsBySlot.values()];
  }

  /** The slot was freed (PurgeAgent): its record goes, and its release
   * time (a Map entry per freed slot would outgrow the 8 bytes a slot
   * this was); a scan's rows of a conversation freed meanwhile are stale
   * by its free time (`AgentRecoveries.conversationFreed`), which is
   * later than any release of it. */
  forgetAgentEntry(slot: number): void {
    this.agentsBySlot.delete(slot);
    this.lastReleases.delete(slot);
  }

  /** Lets go of the record of a conversation at rest in `slot`; returns
   * when an execution of it was last released here, for its arena record
   * to keep (`restoreAgentEntry` takes it back). */
  letGoAtRest(slot: number): number | undefined {
    this.agentsBySlot.delete(slot);
    const releasedAt = this.lastReleases.get(slot);
    this.lastReleases.delete(slot);
    return releasedAt;
  }

  /** Whether the execution holding the agent's admission was let go of at
   * rest (nothing here holds its record then). */
  executionLetGoOf(agent: AgentEntry): boolean {
    const slot = this.settings.core.agentExecutionSlot(agent.slot);
    return slot !== undefined && this.executions.get(slot) === undefined && this.dormant.idAt(slot) !== undefined;
  }

  executionLetGo(entry: ExecutionEntry): void {
    this.onExecutionLetGo?.(entry.agent);
  }

  /** The live execution of this id; one let go of while suspended is
   * rebuilt (bare, its row read back: rehydration.ts). */
  entryById(executionId: string): ExecutionEntry | undefined {
    const entry = this.executionIds.get(executionId);
    if (entry !== undefined) return entry;
    const slot = this.dormant.slotOf(executionId);
    return slot === undefined ? undefined : wake(this, slot);
  }

  /** Whether the execution is live here (running, suspended, held), without
   * rebuilding one let go of. */
  hasExecution(executionId: string): boolean {
    return this.executionIds.has(executionId) || this.dormant.has(executionId);
  }

  /** The agent's executions live here (one running or suspended, and any
   * held for recovery); its suspended one let go of is rebuilt. */
  liveEntriesOf(agent: AgentEntry): ExecutionEntry[] {
    const dormant = this.dormantOf(agent);
    if (dormant !== undefined) wake(this, dormant.slot);
    return [...this.executionIds.values()].filter((entry) => entry.agent === agent);
  }

  /** The agent's execution let go of while suspended, if any (not rebuilt). */
  dormantOf(agent: AgentEntry): { readonly executionId: string; readonly slot: number } | undefined {
    const slot = this.settings.core.agentExecutionSlot(agent.slot);
    const executionId = slot === undefined ? undefined : this.dormant.idAt(slot);
    return executionId === undefined || slot === undefined ? undefined : { executionId, slot };
  }

  /** The live execution in this core slot, if any (rebuilt if let go of). */
  entryAt(slot: number): ExecutionEntry | undefined {
    return this.executions.get(slot) ?? (this.dormant.idAt(slot) === undefined ? undefined : wake(this, slot));
  }

  suspensionKept(entry: ExecutionEntry): void {
    if (this.executions.get(entry.slot) === entry && entry.suspended) this.suspendedHere(entry);
  }

  /** A suspension still held here (live or let go of) found again by a
   * recovery of its conversation — taken back after another process held
   * it: its due time arms the due sweep, as a recovered suspension's does
   * (`suspendedHere`). A sweep run while the conversation was owned
   * elsewhere passed its wait by, and the next rescan is up to a minute
   * away (docs/decisions/0076). */
  suspensionFoundAgain(row: ExecutionRow): void {
    const dueAt = (row.approvalRequest as { readonly dueAt?: unknown } | null)?.dueAt;
    if (typeof dueAt === "number") this.onWaitDue?.(dueAt);
  }

  /** The execution suspended here (live, recovered, or given back): the
   * conversations are told, and once the turn is over it is let go of if
   * the core says it is at rest (rehydration.ts). */
  private suspendedHere(entry: ExecutionEntry): void {
    this.onAgentSuspended?.(entry.agent);
    if (entry.approvalRequest?.kind === "event") this.onEventWait?.(entry.approvalRequest);
    // A wait for a child execution: the child is started (decision 0079).
    if (entry.approvalRequest?.kind === "child") this.onChildWait?.(entry);
    const dueAt = entry.approvalRequest?.dueAt;
    if (dueAt !== undefined) this.onWaitDue?.(dueAt);
    this.post(() => letGo(this, entry));
  }

  /** Live executions the host tracks (for close and for tests). */
  get liveEntries(): number {
    return this.executionIds.size + this.dormant.size;
  }

  // -- RehydrationHost ----------------------------------------------------------------------

  /** The agent entry in `slot`: its record, or the conversation at rest
   * there rebuilt (the one way back in by slot, docs/decisions/0092). */
  agentAt(slot: number): AgentEntry | undefined {
    return this.agentsBySlot.get(slot) ?? this.agentMissing?.(slot);
  }

  holds(entry: ExecutionEntry): boolean {
    return this.executions.get(entry.slot) === entry;
  }

  install(entry: ExecutionEntry): void {
    this.executions.set(entry.slot, entry);
    this.executionIds.set(entry.executionId, entry);
  }

  uninstall(entry: ExecutionEntry): void {
    this.executions.delete(entry.slot);
    this.executionIds.delete(entry.executionId);
  }

  private carryOut(effect: CoreEffect): void {
    switch (effect.kind) {
      case EffectKind.AgentRegistered:
        return;
      case EffectKind.FailRequest:
        return this.failRequest(effect.request, effect.code);
      case EffectKind.SubmitPrepare:
        return this.submitPrepare(effect.agent, effect.ownerToken, effect.request);
      case EffectKind.ExecutionInstalled:
        return this.installExecution(effect.execution, effect.generation, effect.request);
      case EffectKind.RegisterWaiter:
        return this.registerWaiter(effect.execution, effect.request);
      case EffectKind.StartSession:
        return startSession(this, effect.execution, effect.session);
      case EffectKind.SubmitProviderBarrier:
        return submitProviderBarrier(this, effect.execution, effect.session, effect.expectedRevision);
      case EffectKind.SubmitToolBarrier:
        return submitToolBarrier(this, effect.execution, effect.session, effect.expectedRevision);
      case EffectKind.StartProviderCall:
        return sessionOf(this, effect.execution, effect.session)?.startModelCall();
      case EffectKind.StartToolBatch:
        return sessionOf(this, effect.execution, effect.session)?.startToolBatch();
      case EffectKind.SetupFailed:
        return setupFailed(this, effect.execution, effect.session, effect.failure);
      case EffectKind.RecoveryRequired:
        return this.recoveryRequired(effect.slot, effect.scope, effect.code);
      case EffectKind.DropStale:
        return this.settings.logger.debug?.(`[phronomy] dropped a stale ${messageKindName(effect.messageKind)}: ${resultCodeName(effect.code)}`);
      case EffectKind.DeferTerminal:
        return;
      case EffectKind.PostDeferredTerminal:
        return this.postDeferredTerminal(effect.execution, effect.session);
      case EffectKind.SubmitTerminalCommit:
        return submitTerminalCommit(this, effect.execution, effect.session, effect.expectedRevision);
      case EffectKind.DeliverOutcome:
        return this.deliver(effect.execution, effect.outcome);
      case EffectKind.FailWaiters:
        return failWaiters(this, effect.execution, effect.code);
      case EffectKind.ReleaseExecution:
        return this.releaseExecution(effect.execution);
      case EffectKind.DeliverStartFailure:
        return this.deliverStartFailure(effect.request, effect.outcome);
      case EffectKind.SubmitApprovalCommit:
        return submitApprovalCommit(this, effect.execution, effect.expectedRevision, effect.request);
      case EffectKind.ResumeSession:
        return resumeSession(this, effect.execution, effect.session, effect.approved);
      case EffectKind.ContinueSession:
        return continueSession(this, effect.execution, effect.session, effect.continuation);
      case EffectKind.SubmitCancelCommit:
        return submitCancelCommit(this, effect.execution, effect.expectedRevision, effect.request);
      case EffectKind.FollowResume:
        return followResume(this.requests, this.entryAt(effect.execution), effect.request, this.settings);
      case EffectKind.RecoverBeforeResume:
      case EffectKind.AwaitSuspensionCommit:
        return waitBeforeResume(this.requests, this.entryAt(effect.execution), effect.kind, effect.request);
      case EffectKind.FollowQueued:
        return this.busyHooks?.followQueued(this.agentAt(effect.agent));
      case EffectKind.FollowAdmitted:
        return this.onFollowAdmitted?.(this.entryAt(effect.execution), effect.generation);
      case EffectKind.OpenAdmissions:
        return this.ofAgent(effect.agent, (agent) => this.busyHooks?.admissionsOpened(agent));
      case EffectKind.OpenInbox:
        return this.ofAgent(effect.agent, (agent) => this.inbox?.inboxOpened(agent.id, effect.drain));
      case EffectKind.CloseInbox:
        return this.ofAgent(effect.agent, (agent) => this.inbox?.inboxClosed(agent.id));
      case EffectKind.ReadinessChanged:
        return this.busyHooks?.conversationChanged(effect.agent);
      case EffectKind.StartHead:
        return this.ofAgent(effect.agent, (agent) => this.busyHooks?.startHead(agent));
      case EffectKind.RetryHeadAfter:
        return this.ofAgent(effect.agent, (agent) => this.busyHooks?.retryHeadAfter(agent, effect.delayMs));
      case EffectKind.HeadKept:
        return this.ofAgent(effect.agent, (agent) => this.busyHooks?.headKept(agent));
      case EffectKind.HeadTaken:
        return this.ofAgent(effect.agent, (agent) => this.busyHooks?.headTaken(agent));
      case EffectKind.ReleaseConversation:
        return this.ofAgent(effect.agent, (agent) => agent.generation === effect.generation && this.onConversationIdle?.(agent));
      case EffectKind.RetryAfter:
        return this.ofAgent(effect.agent, (agent) => this.onRetryAfter?.(agent, effect.epoch, effect.delayMs));
    }
  }

  // -- start and preparation ----------------------------------------------------------------

  private failRequest(handle: number, code: number): void {
    const request = this.requests.take(handle);
    if (!request) return;
    if (request.type === "recovery") {
      request.settle({ ok: false, error: request.error ?? errorForCode(code, { agentId: request.row.agentId, executionId: request.row.executionId }) });
      return;
    }
    if (request.type === "cancel") return cancelRefused(this, request, code);
    if (request.type === "resume") return resumeRefused(request, code, this.executionIds.get(request.executionId), this.settings);
    const executionId = request.type === "start" ? request.executionId : undefined;
    if (request.type === "start") this.busyHooks?.headLeft(request);
    const error = request.type === "start" && request.storeError ? request.storeError : errorForCode(code, { agentId: request.waiter.agentId, executionId });
    settleWaiterWithError(request.waiter, error, this.settings);
  }

  private submitPrepare(agentSlot: number, ownerToken: number, handle: number): void {
    const request = this.startRequest(handle);
    const agent = this.agentAt(agentSlot);
    if (request && agent) submitPrepare(this, agent, request, ownerToken, handle);
  }

  private deliverStartFailure(handle: number, outcome: number): void {
    const request = this.requests.take(handle);
    if (!request || request.type !== "start") return;
    const context = { agentId: request.agent.id, executionId: request.executionId };
    const prepared = request.prepared;
    let error: PhronomyError;
    if (prepared && prepared.outcome !== "active") error = errorFromRecord(prepared.error, context);
    else if (request.storeError) error = request.storeError;
    else
      error = new ExecutionRehydrationRequiredError(
        `preparation of execution ${request.executionId ?? "(unknown)"} ended with preparation outcome ${outcome}`,
        context,
      );
    // A queue head the store failed to prepare is still queued there: the
    // core keeps it, its Run not told (docs/decisions/0058, 0062).
    if (this.busyHooks?.headFailed(request, error)) return;
    // Refused because its conversation was moved elsewhere (0101): the core
    // may place it again (docs/decisions/0112); its release is told first.
    if (placeRefusedStart(this.settings.core, request, error, () => this.admissionReleased(request.agent))) return;
    settleWaiterWithError(request.waiter, error, this.settings);
    this.admissionReleased(request.agent);
  }

  private installExecution(slot: number, generation: number, handle: number): void {
    const pending = this.requests.get(handle);
    const request = pending?.type === "start" ? pending : pending?.type === "recovery" ? pending.start : undefined;
    if (!request?.executionId) throw new PhronomyError("INTERNAL", `installed execution slot ${slot} for an unknown request ${handle}`);
    if (pending?.type === "start") this.busyHooks?.headLeft(request);
    const entry = new ExecutionEntry(slot, generation, request.executionId, request.agent, request);
    if (request.cancelById !== undefined) entry.cancelById ??= request.cancelById;
    this.executions.set(slot, entry);
    this.executionIds.set(request.executionId, entry);
    request.waiter.knowExecutionId(request.executionId);
    if (pending?.type === "recovery") this.continueInstalled(entry, pending, handle);
  }

  /** A recovered execution is installed: a suspended one waits for its
   * decision as it is; any other continues where its facts say. */
  private continueInstalled(entry: ExecutionEntry, request: RecoveryRequest, handle: number): void {
    if (request.reopen) return reopenInstalled(this, entry, request, handle, () => this.continueInstalled(entry, request, handle));
    if (request.row.status === "suspended") {
      // Nothing waits on a recovered execution's stand-in start, and a
      // resume reads the row again: keep only what the decision needs.
      this.requests.take(handle);
      restoreSuspension(entry, request.row);
      request.settle({ ok: true, suspended: true });
      if (!request.standIn) entry.waiters.push(request.start.waiter.tail());
      this.suspendedHere(entry);
      return;
    }
    entry.recoveredFrom = request.row;
    entry.waiters.push(request.start.waiter);
    // A row in a state no store writes names Continuation.None: the core
    // refuses it, holds the agent and fails the request (decision 0022).
    this.post(() => this.apply(M.ContinueRecovered, entry.slot, entry.generation, request.row.revision, request.continuation, 0, handle));
  }

  private registerWaiter(slot: number, handle: number): void {
    const request = this.requests.take(handle);
    const entry = this.entryAt(slot);
    if (!request || !entry) return;
    if (request.type === "recovery") {
      request.settle({ ok: true, suspended: false });
      return;
    }
    if (request.type === "resume") {
      // The core accepted this decision and its commit landed: only now do
      // its reason and signal become the resumed run's.
      entry.resumeReason = request.reason ?? undefined;
      entry.resumeSignal = request.signal;
      attachFollowers(request, entry);
    }
    if (request.waiter.settled) return;
    entry.waiters.push(request.waiter);
    request.waiter.knowExecutionId(entry.executionId);
    // An observer attached mid-call hears the streamed text so far (decision 0072).
    if (request.type === "attach") for (const event of entry.session?.catchUpEvents() ?? []) emitToWaiter(request.waiter, event, this.settings, entry);
  }

  // -- the session ------------------------------------------------------------------------------

  private recoveryRequired(slot: number, scope: number, code: number): void {
    if (scope === RecoveryScope.Agent) {
      const agent = this.agentAt(slot);
      this.settings.logger.warn(
        `[phronomy] agent "${agent?.id ?? slot}" requires recovery (code ${code}): its admission is held until env.recover() resolves it`,
      );
      if (agent) this.onAgentRecoveryRequired?.(agent.id);
      return;
    }
    const error = holdForRecovery(this, slot, code);
    const entry = this.entryAt(slot);
    if (error !== undefined && entry !== undefined) this.onExecutionRecoveryRequired?.(entry.agent.id, error);
  }

  // -- terminal -----------------------------------------------------------------------------------

  private postDeferredTerminal(slot: number, sessionNumber: number): void {
    const entry = this.entryAt(slot);
    if (!entry) return;
    this.post(() => this.apply(M.DeferredTerminal, slot, entry.generation, sessionNumber));
  }

  private deliver(slot: number, outcome: number): void {
    const entry = this.entryAt(slot);
    if (!entry) return;
    entry.suspended = outcome === OutcomeType.Suspended;
    if (entry.suspended) entry.approvalRequest = entry.session?.terminal?.approvalRequest;
    deliverOutcome(entry, outcome, this.settings);
    // A suspension may last for days: keep only what the resume needs (the
    // approval request); the conversation is read back from the store. Its
    // span ends here: the resume has its own.
    if (entry.suspended) {
      entry.span?.set({ "phronomy.outcome": "suspended" });
      entry.span?.end();
      entry.span = undefined;
      entry.session = undefined;
      entry.keepForResume();
      entry.waiters = entry.waiters.map((waiter) => waiter.tail());
    }
    if (entry.suspended) this.suspendedHere(entry);
    for (const watcher of entry.terminalWatchers.splice(0)) watcher();
  }

  private releaseExecution(slot: number): void {
    const entry = this.entryAt(slot);
    if (!entry) return;
    this.executions.delete(slot);
    this.executionIds.delete(entry.executionId);
    this.lastReleases.set(entry.agent.slot, performance.now());
    entry.span?.end();
    this.admissionReleased(entry.agent);
    for (const watcher of entry.terminalWatchers.splice(0)) watcher();
  }

  /** The agent's admission may have been released (an execution released,
   * a start ended by its preparation): the core answers `StartHead` when
   * a queued message may start, `ReleaseConversation` when the
   * conversation is idle, or nothing (docs/decisions/0062). */
  private admissionReleased(agent: AgentEntry): void {
    this.post(() => this.apply(M.AdmissionReleased, agent.slot, agent.generation));
  }

  /** Carries out a conversation's effect on its agent entry, if it has one. */
  private ofAgent(slot: number, carryOut: (agent: AgentEntry) => unknown): void {
    const agent = this.agentAt(slot);
    if (agent !== undefined) carryOut(agent);
  }

  // -- approval and recovery --------------------------------------------------------------------------

  // -- SessionHost ------------------------------------------------------------------------------------

  sessionEvent(session: Session, event: SessionEventKind): void {
    this.post(() => this.apply(M.SessionEvent, session.slot, session.generation, session.number, event));
  }

  operationSettled(session: Session): void {
    this.apply(M.OperationSettled, session.slot, session.generation);
  }

  sessionFinished(session: Session, ending: SessionEnding): void {
    if (ending === SessionEnding.Cancelled) {
      this.post(() => this.apply(M.CancelRequested, session.slot, session.generation));
    }
    this.post(() => this.apply(M.SessionFinished, session.slot, session.generation, session.number, ending));
  }

  emit(session: Session, event: ExecutionEvent): void {
    const entry = this.executions.get(session.slot);
    if (entry && entry.generation === session.generation) emitToEntry(entry, event, this.settings);
  }

  now(): number {
    return this.settings.now();
  }

  toolCallsToStart(calls: number, started: number, settled: number, limit: number, finished: number): number {
    return this.settings.core.toolCallsToStart(calls, started, settled, limit, finished);
  }

  turnCallVerdict(facts: number): number {
    return this.settings.core.turnCallVerdict(facts);
  }

  /** What comes of a failed attempt of a model call or a tool (the
   * session's `SessionHost.failedAttemptVerdict`). */
  failedAttemptVerdict(facts: number, number: number, maxRetries: number): number {
    return this.settings.core.failedAttemptVerdict(facts, number, maxRetries);
  }

  private startRequest(handle: number): StartRequest | undefined {
    const request: PendingRequest | undefined = this.requests.get(handle);
    return request?.type === "start" ? request : undefined;
  }
}

/** The options of every completion posted (a score per run): one object. */
const completionPost: PostOptions = { label: "a completion" };

export { configOf } from "./execution-preparation.js";
export { OffloadFullError };
