// The application's handle on one agent: start executions, close it.
// `start` never throws: every failure, including a malformed option, is
// delivered through the returned Run (its `result` rejects with a typed
// error), exactly as a failure later in the execution would be.

import { AdmissionSource, MessageKind as M, ResumeFact } from "../../assembly/abi.js";
import { InvalidInputError, PhronomyError } from "../errors.js";
import type { ControlCore } from "../core/control-core.js";
import type { ExecutionStore } from "../store/store.js";
import type { ControlLoop } from "./control-loop.js";
import type { Coordinator } from "./coordinator.js";
import type { RemoteResumes } from "./remote-resume.js";
import { validateResumeDecision, validateStartOptions, type ResumeDecision, type StartOptions } from "./options.js";
import { checkAction, waitsForInput, type Decision } from "./wait-decisions.js";
import { eventFactsOf } from "./event-signal-facts.js";
import { waitsForChild } from "./child-waits.js";
import { hasDeadline, waitsForClock } from "./wait-deadlines.js";
import type { AgentEntry, ExecutionEntry, FiledVerdict, StartRequest } from "./requests.js";
import { typedRun, Waiter, type Run } from "./run.js";
import { emitToWaiter, outcomeEventOf, resolveWaiter, settleWaiterWithError } from "./delivery.js";
import { startExecutionIdOf } from "../store/start-filing.js";
import type { Json } from "../store/records.js";
import type { RemoteStarts } from "./remote-start.js";
import { asPhronomyError } from "./session.js";
import { heldAfterUnknownCommit, refusalOfResume } from "./resume-refusal.js";
import { sameDecision } from "./resume-followers.js";
import type { HandoffRequest } from "./events.js";
import type { DefinitionKind } from "./definition-kind.js";
import { startInputOf, type StartInput } from "./start-input.js";
import { checkCallOptions } from "./start-call-settings.js";
import type { ModelMessage, UIMessage, UserContent } from "ai";
import type { HistoryMetadata } from "./journal-messages.js";
import { journalRecordsKept } from "../store/prune.js";
import { randomUUID } from "node:crypto";
import { judgeKeyedRefusal } from "./keyed-start-refusal.js";
import type { Schedule, ScheduleMaker, ScheduleOptions } from "./schedule-words.js";
import { whenRead } from "./rehydration.js";

/** What a start takes: a string, AI SDK model messages (system, user and
 * assistant; the last one the user's), or the parts of one user message
 * (text, images, files). */
export type AgentInput = string | ModelMessage[] | Exclude<UserContent, string>;

export { INPUT_LENGTH_MAX } from "./start-input.js";

/** @internal What a conversation's handle asks of its environment
 * (environment.ts implements it). Declared here because the environment
 * makes the handles: this file imports nothing of it. */
export interface AgentHost {
  readonly store: ExecutionStore;
  readonly core: ControlCore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  readonly conversations: AgentConversations;
  /** The conversation queues: a start asks the core's admission there;
   * `retry` posts it again when the core answers `WaitUntilReady`. */
  readonly queues: {
    admitStart(
      request: StartRequest,
      source: AdmissionSource.Direct | AdmissionSource.Filed,
      aborted: boolean,
      retry: () => void,
      file: (inbox: RemoteStarts) => void,
    ): void;
  };
  assertOpen(what: string): void;
  assertOwner(what: string): void;
  assertStoreWritable(what: string): void;
  /** On the loop, before `Admit`: this process's own lease of the
   * conversation settling is told to the core as a recovery (true). */
  settleLease(entry: AgentEntry): void;
  admittedAs(executionId: string): Promise<boolean>;
  /** `refusal`: a keyed start's own, told if the key's execution turns
   * out neither stored nor filed (decision 0145). */
  followExecution(agentId: string, executionId: string, waiter: Waiter, refusal?: PhronomyError): void;
  recoverHeld(agentId: string): Promise<void>;
  remoteResumesFor(agent: AgentEntry): RemoteResumes | undefined;
  /** The conversation's last `limit` memory records as UI messages, each
   * answer with the parts its chat stream showed (environment-reads.ts). */
  history(agentId: string, limit: number): Promise<UIMessage<HistoryMetadata>[]>;
  /** Scheduled starts (schedules.ts, docs/decisions/0078). */
  readonly scheduling: ScheduleMaker;
}

/** @internal The conversations' bookkeeping (conversations.ts), as a handle uses it. */
export interface AgentConversations {
  checkOwnership(agentId: string, kind: DefinitionKind): void;
  use(agentId: string, kind: DefinitionKind): { readonly entry: Promise<AgentEntry>; readonly done: () => void };
  liveEntry(agentId: string): Promise<AgentEntry> | undefined;
  release(agentId: string): Promise<void>;
}

/** @internal What every conversation of one definition shares: a handle
 * holds this and its id only (two fields: an application holding a million
 * handles holds ≈40 bytes each besides the ids, docs/decisions/0028). */
export interface AgentScope {
  readonly environment: AgentHost;
  readonly kind: DefinitionKind;
  readonly ready: Promise<void>;
}

/** A conversation: one agent id of a definition (docs/decisions/0024).
 * Holding one costs nothing; its entry in the core exists while it works. */
export class Agent<OUTPUT = Json> {
  /** @internal Made by `env.agent` and `conversation(id)`, never by hand. */
  constructor(
    private readonly scope: AgentScope,
    /** The agent (conversation) id. */
    readonly id: string,
  ) {}

  private get environment(): AgentHost {
    return this.scope.environment;
  }

  /** @internal The definition this conversation belongs to. */
  get kind(): DefinitionKind {
    return this.scope.kind;
  }

  /** Resolves once the definition's unfinished executions found when the
   * environment opened are recovered (starts wait for it on their own). */
  get ready(): Promise<void> {
    return this.scope.ready;
  }

  /** Schedules starts of this conversation (docs/decisions/0078): once
   * `at` a time, or on a `cron` schedule (five fields, UTC), each an
   * ordinary start with the conversation's busy policy, fired exactly once
   * by one of the processes sharing the store. Resolves with the stored
   * schedule (`scheduleId`); a bad input, option or cron is refused with
   * InvalidInputError naming it. */
  schedule(input: AgentInput, options: ScheduleOptions): Promise<Schedule> {
    return this.environment.scheduling.create(this.id, this.kind.name, input, options);
  }

  /** Counts one operation on this conversation until its run's execution
   * id settles (admitted, or refused): its core entry is kept meanwhile. */
  private use(waiter: Waiter): Promise<AgentEntry> {
    const use = this.environment.conversations.use(this.id, this.kind);
    waiter.executionId.then(use.done, use.done);
    return use.entry;
  }

  /** Starts an execution. The run's `executionId` resolves once it is
   * admitted and prepared; `result` with its outcome. On PostgreSQL, a
   * conversation whose partition another live process holds is started
   * there: the start is filed in the inbox, `executionId` resolves once it
   * is filed, and the Run follows the execution from the store
   * (docs/decisions/0031). With `idempotencyKey`, a key started already
   * is not started again: the Run follows that execution. */
  start(given: AgentInput, options: StartOptions = {}): Run<OUTPUT> {
    return typedRun(this.startAs(given, options, undefined));
  }

  /** @internal A start filed by another process, run here under the
   * execution id it was filed with (never filed again); `filed` gets the
   * core's verdicts on it. */
  startFiled(given: AgentInput, options: StartOptions, executionId: string, filed: FiledVerdict): Run {
    return this.startAs(given, options, executionId, filed);
  }

  private startAs(given: AgentInput, options: StartOptions, filedAs: string | undefined, filed?: FiledVerdict): Run {
    const outer = new Waiter(this.id, typeof options?.onEvent === "function" ? options.onEvent : undefined);
    const settings = this.environment.coordinator.settings;
    let startInput: StartInput;
    try {
      validateStartOptions(options, `agent "${this.id}".start()`);
      try {
        startInput = startInputOf(given, `agent "${this.id}".start(input)`);
      } catch (error) {
        throw error instanceof InvalidInputError ? new InvalidInputError(error.message, { agentId: this.id, cause: error.cause }) : error;
      }
      const what = `a start of agent "${this.id}"`;
      this.environment.assertOpen(what);
      this.environment.assertOwner(what);
      this.environment.assertStoreWritable(what);
      this.environment.conversations.checkOwnership(this.id, this.kind);
    } catch (error) {
      settleWaiterWithError(outer, error as PhronomyError, settings);
      return outer;
    }
    const keyed = options.idempotencyKey !== undefined ? startExecutionIdOf(this.id, options.idempotencyKey) : undefined;
    const executionId = filedAs ?? keyed;
    // A start with a key whose execution is in the store already follows it
    // (the inner run is refused "execution_exists" by the store).
    const waiter = keyed !== undefined && filedAs === undefined ? this.followingOnDuplicate(outer, keyed) : outer;
    // The run's budget starts now; the agent's timeoutMs is the default.
    const startedAt = settings.now();
    const proceed = (agent: AgentEntry): void => {
      const timeoutMs = options.timeoutMs ?? agent.definition.timeoutMs;
      const deadline = timeoutMs !== undefined ? startedAt + timeoutMs : undefined;
      const request: StartRequest = {
        type: "start",
        agent,
        waiter,
        ...startInput,
        options,
        deadline,
        ...(executionId !== undefined ? { executionId } : {}),
        ...(filed !== undefined ? { filed } : {}),
      };
      const file = (remote: RemoteStarts): void => this.fileStart(remote, given, options, executionId ?? randomUUID(), outer, waiter);
      this.admit(request, filedAs === undefined ? AdmissionSource.Direct : AdmissionSource.Filed, file);
    };
    this.use(waiter).then(
      (agent) => {
        // A definition that takes call options validates them first (decision 0071).
        if (agent.definition.callOptionsSchema !== undefined || options.options !== undefined) {
          checkCallOptions(agent.definition, options.options, `agent "${this.id}".start()`).then(
            () => proceed(agent),
            (error: unknown) => settleWaiterWithError(waiter, error as PhronomyError, settings),
          );
          return;
        }
        proceed(agent);
      },
      (error: unknown) => settleWaiterWithError(waiter, error as PhronomyError, settings),
    );
    return outer;
  }

  /** Posts the start's admission: the core answers where it goes — run,
   * queue (docs/decisions/0025), refuse, wait until the conversation is
   * ready (0062), after which it is posted again from here, or file it for
   * the process that holds the conversation (0031: `file`). */
  private admit(request: StartRequest, source: AdmissionSource.Direct | AdmissionSource.Filed, file: (remote: RemoteStarts) => void): void {
    const { loop, coordinator } = this.environment;
    let first = true;
    const attempt = (): void => {
      // This process's own lease settling (docs/decisions/0055): a recovery
      // the core knows, so `Admit` answers wait; asked once per start.
      if (first) this.environment.settleLease(request.agent);
      first = false;
      this.environment.queues.admitStart(request, source, request.options.signal?.aborted === true, post, file);
    };
    const post = (): void => {
      loop.post(attempt, {
        admission: true,
        completion: { fail: (error) => settleWaiterWithError(request.waiter, error as PhronomyError, coordinator.settings) },
        label: `a start of agent "${this.id}"`,
      });
    };
    request.placement = { direct: source === AdmissionSource.Direct, post };
    post();
  }

  /** Files the start for the partition's owner; `outer` follows it. The
   * inner waiter (a keyed start's) only releases the conversation's use. */
  private fileStart(remote: RemoteStarts, given: AgentInput, options: StartOptions, executionId: string, outer: Waiter, inner: Waiter): void {
    const settings = this.environment.coordinator.settings;
    const local = (["signal", "approvalListener", "inputGuardrail", "outputGuardrail"] as const).filter((key) => options[key] !== undefined);
    // A keyed start's inner waiter only holds the conversation's use: let
    // go once the outer Run knows its id (filed) or failed.
    if (inner !== outer)
      outer.executionId.then(
        () => inner.knowExecutionId(executionId),
        () => inner.knowExecutionId(executionId),
      );
    if (local.length > 0) {
      return settleWaiterWithError(
        outer,
        new InvalidInputError(
          `agent "${this.id}".start(): this process does not hold conversation "${this.id}" (another live process does), so the start goes to that process through the inbox, where ${local.map((key) => `"${key}"`).join(", ")} cannot follow it; start without ${local.length === 1 ? "it" : "them"}, or on the process that holds the conversation`,
          { agentId: this.id, details: { reason: "not_transferable", options: local } },
        ),
        settings,
      );
    }
    const { signal: _signal, onEvent: _onEvent, approvalListener: _listener, inputGuardrail: _in, outputGuardrail: _out, ...carried } = options;
    remote.file(
      this.id,
      executionId,
      { input: given as unknown as Json, options: carried, ...(this.kind.name !== undefined ? { definition: this.kind.name } : {}) },
      outer,
    );
  }

  /** The waiter a keyed start runs with: its events and outcome go to
   * `outer`, except a refusal because the key's execution is in the store
   * already — then `outer` follows that execution. */
  private followingOnDuplicate(outer: Waiter, executionId: string): Waiter {
    const settings = this.environment.coordinator.settings;
    const inner = new Waiter(this.id, (event) => {
      // The refusal's own terminal event is not the outer run's.
      if (event.type === "error" || event.type === "timeout" || event.type === "cancelled") return;
      emitToWaiter(outer, event, settings);
    });
    inner.executionId.then(
      (id) => outer.knowExecutionId(id),
      () => undefined,
    );
    // The outer Run's listener failing fails it under fail_task (decision 0056).
    inner.result.then(
      (result) => resolveWaiter(outer, result, outcomeEventOf(result), settings),
      (error: unknown) => {
        const refusal = asPhronomyError(error, "INTERNAL");
        // The key's execution in the store already, or busy with this very
        // key (its first start still runs, or is being prepared here):
        // follow it; else the refusal is the outer Run's (the core decides).
        judgeKeyedRefusal(
          settings.core,
          refusal,
          () => this.environment.admittedAs(executionId),
          (follows) => {
            if (follows) return this.environment.followExecution(this.id, executionId, outer, refusal);
            settleWaiterWithError(outer, refusal, settings);
          },
        );
      },
    );
    return inner;
  }

  /** Decides the pending approval of one of this agent's suspended
   * executions. Live here: applied here. On PostgreSQL, from a process that
   * does not hold the agent's lease — or from a visitor of a SQLite store
   * (docs/decisions/0015): filed in the approval inbox for the
   * owner to apply (docs/decisions/0011-approval-inbox.md) — `executionId`
   * resolves once filed, no progress events are streamed here. Either way
   * the Run's result is the execution's final outcome; every earlier
   * waiter on it is settled too. */
  resume(executionId: string, decision: ResumeDecision): Run<OUTPUT> {
    return typedRun(this.resumeAs(executionId, decision));
  }

  private resumeAs(executionId: string, decision: ResumeDecision): Run {
    const waiter = new Waiter(this.id, typeof decision?.onEvent === "function" ? decision.onEvent : undefined);
    const settings = this.environment.coordinator.settings;
    try {
      return this.resumeDecided(executionId, validateResumeDecision(executionId, decision, `agent "${this.id}".resume()`));
    } catch (error) {
      settleWaiterWithError(waiter, error as PhronomyError, settings);
      return waiter;
    }
  }

  /** @internal A decision already checked for its shape (`resume`, and
   * `env.signal`'s signal for an event wait, decision 0077): applied here,
   * or filed for the owner. `applied` is told once its commit landed
   * (here, or the owner's), before the execution goes on. */
  resumeDecided(executionId: string, checked: Decision, applied?: () => void): Run {
    const waiter = new Waiter(this.id, typeof checked.onEvent === "function" ? checked.onEvent : undefined);
    const settings = this.environment.coordinator.settings;
    try {
      this.environment.assertOpen(`a resume of execution ${executionId}`);
      this.environment.assertStoreWritable(`a resume of execution ${executionId}`);
      this.environment.conversations.checkOwnership(this.id, this.kind);
    } catch (error) {
      settleWaiterWithError(waiter, error as PhronomyError, settings);
      return waiter;
    }
    this.use(waiter).then(
      (agent) => {
        const { coordinator, loop } = this.environment;
        loop.post(
          () => {
            const remote = coordinator.hasExecution(executionId) ? undefined : this.environment.remoteResumesFor(agent);
            if (remote === undefined) {
              // A resume waiter learns its execution id when the commit landed.
              if (applied !== undefined) waiter.executionId.then(applied, () => undefined);
              return this.resumeHere(agent, executionId, checked, waiter);
            }
            if (checked.signal !== undefined) {
              return settleWaiterWithError(
                waiter,
                new InvalidInputError(
                  `agent "${this.id}".resume(): this process does not own agent "${this.id}", so the decision on execution ${executionId} goes to its owner through the approval inbox, where a signal cannot follow it; resume without "signal", or on the process that owns the agent`,
                  { executionId, agentId: this.id },
                ),
                settings,
              );
            }
            remote.file(this.id, executionId, checked, waiter, applied);
          },
          {
            admission: true,
            completion: { fail: (error) => settleWaiterWithError(waiter, error as PhronomyError, settings) },
            label: `a resume of execution ${executionId}`,
          },
        );
      },
      (error: unknown) => settleWaiterWithError(waiter, error as PhronomyError, settings),
    );
    return waiter;
  }

  /** @internal Applies a decision taken from the approval inbox through the
   * local resume path: undefined once its approval commit landed (the
   * resumed run goes on here), or the refusal a local resume would get. */
  applyFiledDecision(executionId: string, decision: Decision): Promise<PhronomyError | undefined> {
    const waiter = new Waiter(this.id, undefined);
    const settings = this.environment.coordinator.settings;
    const entry = (() => {
      try {
        return this.use(waiter);
      } catch (error) {
        return Promise.reject(error);
      }
    })();
    entry.then(
      (agent) => {
        this.environment.loop.post(() => this.resumeHere(agent, executionId, decision, waiter), {
          admission: true,
          completion: { fail: (error) => settleWaiterWithError(waiter, error as PhronomyError, settings) },
          label: `a decision from the approval inbox on execution ${executionId}`,
        });
      },
      (error: unknown) => settleWaiterWithError(waiter, error as PhronomyError, settings),
    );
    // A resume waiter learns its execution id when the approval commit landed.
    return waiter.executionId.then(
      () => undefined,
      (error: unknown) => asPhronomyError(error, "INTERNAL"),
    );
  }

  /** The resume of an execution live in this process (on the loop). The
   * host gathers what only it can see (`ResumeFact`); the core decides:
   * commit, follow the commit under way, refuse, or wait — recover the
   * held execution first, or wait for the suspension being committed —
   * and the decision is sent again after the wait (docs/decisions/0065). */
  private resumeHere(agent: AgentEntry, executionId: string, decision: Decision, waiter: Waiter, afterRecovery = false): void {
    const { coordinator, loop } = this.environment;
    const settings = coordinator.settings;
    const entry = coordinator.entryById(executionId);
    if (!entry) {
      // Not live here: its durable row says why (ended, decided, unknown,
      // or not recovered yet).
      this.environment.store.getExecution(executionId).then(
        (row) => settleWaiterWithError(waiter, refusalOfResume(executionId, decision.approvalId, this.id, row), settings),
        (error: unknown) => settleWaiterWithError(waiter, asPhronomyError(error, "STORE"), settings),
      );
      return;
    }
    // Let go of while suspended: its pending approval is read back first.
    const again = (): void => this.resumeHere(agent, executionId, decision, waiter, afterRecovery);
    if (whenRead(coordinator, entry, again, (error) => settleWaiterWithError(waiter, asPhronomyError(error, "STORE"), settings))) return;
    if (this.checkAnswerFirst(agent, entry, decision, (checked) => this.resumeHere(agent, executionId, checked, waiter, afterRecovery), waiter)) return;
    let facts = afterRecovery ? ResumeFact.AfterRecovery : 0;
    if (entry.approvalRequest?.approvalId === decision.approvalId) facts |= ResumeFact.MatchesPending;
    // The session's ending, not committed yet (its row may already be read,
    // by env.pendingApprovals), is the suspension asking for this decision.
    if (entry.session?.terminal?.approvalRequest?.approvalId === decision.approvalId) facts |= ResumeFact.MatchesCommittingSuspension;
    // The wait's kind and the answer's schema check: the core decides what
    // they allow (docs/decisions/0075).
    if (waitsForInput(entry.approvalRequest)) facts |= ResumeFact.PendingWaitsForInput;
    if (decision.given?.kind === "value") facts |= ResumeFact.GivesValue;
    // The clock's answer (a timer, a timeout): decision 0076.
    if (waitsForClock(entry.approvalRequest)) facts |= ResumeFact.PendingWaitsForClock;
    if (hasDeadline(entry.approvalRequest)) facts |= ResumeFact.PendingHasDeadline;
    if (decision.given?.kind === "fire") facts |= ResumeFact.ClockAnswers;
    if (decision.checked?.error !== undefined) facts |= ResumeFact.ValueRefused;
    facts |= eventFactsOf(entry.approvalRequest, decision);
    // A child's wait, and a child's end (decision 0079).
    if (waitsForChild(entry.approvalRequest)) facts |= ResumeFact.PendingWaitsForChild;
    if (decision.given?.kind === "child") facts |= ResumeFact.GivesChildOutcome;
    // The same decision as the one being committed, if any, follows it.
    const committing = coordinator.requests.resumeOf(executionId);
    const same = committing !== undefined && sameDecision(committing, decision);
    const askAgain = (): void => {
      loop.post(() => this.resumeHere(agent, executionId, decision, waiter), {
        completion: { fail: (error) => settleWaiterWithError(waiter, error as PhronomyError, settings) },
        label: `a resume of execution ${executionId} once its suspension was committed`,
      });
    };
    // The reason and signal travel with the request: the entry adopts them
    // only if the core accepts this decision and its commit lands.
    const handle = coordinator.requests.add({
      type: "resume",
      waiter,
      executionId,
      approvalId: decision.approvalId,
      approved: decision.approved,
      reason: decision.reason ?? null,
      action: decision.checked?.action,
      decidedBy: decision.decidedBy ?? null,
      filedAs: decision.filedAs ?? null,
      clock: decision.given?.kind === "fire",
      refusedAnswer: decision.checked?.error,
      signal: decision.signal,
      afterRecovery,
      waits: { recoverFirst: () => this.resumeAfterRecovery(agent, executionId, decision, waiter), askAgain },
    });
    coordinator.apply(M.Resume, entry.slot, entry.generation, agent.slot, agent.generation, handle, facts, same ? 1 : 0);
  }

  /** A decision on an execution a store fault held here (its last commit's
   * outcome not known): the store is read to find out, the execution
   * recovered from what it holds, then the decision sent again — the core
   * refuses it if the execution is still held, the row words the refusal if
   * the earlier decision was written (docs/decisions/0057). */
  /** An answer beyond approve/decline is checked against its schema first,
   * off the loop (a Standard Schema may validate asynchronously), once the
   * pending wait it is for is known here; then the decision is sent on
   * with the outcome. True when it went to be checked. */
  private checkAnswerFirst(agent: AgentEntry, entry: ExecutionEntry, decision: Decision, then: (checked: Decision) => void, waiter: Waiter): boolean {
    const pending = entry.approvalRequest ?? entry.session?.terminal?.approvalRequest;
    if (decision.given === undefined || decision.checked !== undefined || pending?.approvalId !== decision.approvalId) return false;
    const settings = this.environment.coordinator.settings;
    const fail = (error: unknown): void => settleWaiterWithError(waiter, asPhronomyError(error, "INVALID_INPUT"), settings);
    checkAction(agent.tools, pending, decision.given).then(
      (checked) =>
        this.environment.loop.post(() => then({ ...decision, checked }), { completion: { fail }, label: `a decision on execution ${entry.executionId}` }),
      fail,
    );
    return true;
  }

  private resumeAfterRecovery(agent: AgentEntry, executionId: string, decision: Decision, waiter: Waiter): void {
    const { coordinator, loop } = this.environment;
    const settings = coordinator.settings;
    const refuse = (error: unknown): void => settleWaiterWithError(waiter, asPhronomyError(error, "STORE"), settings);
    const unreadable = (cause: unknown): void => refuse(heldAfterUnknownCommit(executionId, this.id, asPhronomyError(cause, "STORE")));
    const again = (): void => this.resumeHere(agent, executionId, decision, waiter, true);
    const label = `a decision on execution ${executionId} after its recovery`;
    this.environment.recoverHeld(this.id).then(() => loop.post(again, { completion: { fail: refuse }, label }), unreadable);
  }

  /** Starts this agent from another agent's handoff: its input and reason
   * become this execution's input. */
  startFromHandoff(handoff: HandoffRequest, options: StartOptions = {}): Run<OUTPUT> {
    if (handoff.targetAgentId !== this.id) {
      const waiter = new Waiter(this.id, undefined);
      settleWaiterWithError(
        waiter,
        new InvalidInputError(`the handoff targets agent "${handoff.targetAgentId}", not "${this.id}"`, { agentId: this.id }),
        this.environment.coordinator.settings,
      );
      return typedRun(waiter);
    }
    const input = typeof handoff.input === "string" ? handoff.input : JSON.stringify(handoff.input);
    const framed = handoff.reason ? `${input}\n\n(handed off by agent "${handoff.fromAgentId}": ${handoff.reason})` : input;
    return this.start(framed, options);
  }

  /** Closes the agent: new starts fail with AgentClosedError; a running
   * execution finishes. Durable: a start in a later process is refused by
   * its preparation, which reads the closed root in its transaction. */
  async close(): Promise<void> {
    this.environment.conversations.checkOwnership(this.id, this.kind);
    await this.environment.store.closeAgent(this.id, Date.now());
    // With an entry in the core now, starts are refused there at once;
    // through the coordinator, so a start waiting for the conversation's
    // readiness asks again now and is refused, not when its recovery ends.
    const entry = await this.environment.conversations.liveEntry(this.id)?.catch(() => undefined);
    if (entry === undefined) return;
    await new Promise<void>((resolve, reject) => {
      this.environment.loop.post(
        () => {
          this.environment.coordinator.apply(M.CloseAgent, entry.slot, entry.generation);
          resolve();
        },
        { completion: { fail: reject }, label: `the close of agent "${this.id}"` },
      );
    });
  }

  /** The conversation as the AI SDK's UI messages, oldest first: its last
   * `limit` (100, at most 1,000) memory records — each execution's input and
   * answer — which outlive the executions themselves (retention keeps
   * them). A chat page loads them with `useChat({ messages })`; an
   * assistant message's id is its execution's id. While its execution is
   * stored, an answer has every part its chat stream showed — reasoning,
   * tool parts in their states (an approval waiting included), sources,
   * files — and the stream's metadata; once pruned, its text. */
  async messages(options: { readonly limit?: number } = {}): Promise<UIMessage<HistoryMetadata>[]> {
    const limit = options?.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > journalRecordsKept) {
      throw new InvalidInputError(`agent "${this.id}".messages(): limit must be an integer from 1 to ${journalRecordsKept}`, { agentId: this.id });
    }
    this.environment.assertOpen(`agent "${this.id}".messages()`);
    return this.environment.history(this.id, limit);
  }

  /** Lets this conversation go without deleting anything: its entry in
   * the core is freed and (PostgreSQL) its lease given up. A conversation
   * is let go on its own once idle; `release` also lets go of one the
   * process keeps (an agent defined by id keeps its lease). Refused with
   * AgentBusyError while it has an execution running, suspended or held
   * here. A later start uses it again. */
  release(): Promise<void> {
    return this.environment.conversations.release(this.id);
  }
}
