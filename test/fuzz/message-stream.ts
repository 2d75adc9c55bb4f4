// Turns fuzzer "intents" into concrete control messages. An intent is a
// handful of random integers; it is interpreted against what the stream has
// seen so far (agents registered, offload submissions and operations the
// core asked for), so most messages are meaningful: results of real
// submissions, in any order, sometimes duplicated, sometimes stale, sometimes
// for a released slot or with an out-of-range enum. The interpretation is
// deterministic, so fast-check can shrink a failing stream of intents.

import {
  AdmissionSource,
  AdmissionState,
  AgentLifecycle,
  BusyPolicy,
  CommitOutcome,
  Continuation,
  EffectKind,
  Limit,
  MessageKind,
  MessageKindLimit,
  OutcomeType,
  Phase,
  PreparationOutcome,
  RecoveryFact,
  ResumeFact,
  SessionEnding,
  SessionEventKind,
  Submission,
  ExecutionStatus,
  ExecutionFlag,
  ExecutionFlagMask,
} from "../../assembly/abi.js";
import type { CoreEffect } from "../../host/core/effects.js";
import type { CoreSnapshot } from "../../host/core/machine.js";
import { conversationMessage } from "./conversation-messages.js";

export interface Intent {
  readonly kind: number;
  readonly pick: number;
  readonly variant: number;
  readonly noise: number;
}

export type Message = readonly [kind: number, a: number, b: number, c: number, d: number, e: number, f: number, g: number];

type Pending =
  | { type: "prepare"; agent: number; generation: number; token: number; request: number }
  | { type: "provider" | "tool"; execution: number; generation: number; session: number; revision: number }
  | { type: "operation"; execution: number; generation: number }
  | { type: "deferred"; execution: number; generation: number; session: number }
  | { type: "terminal"; execution: number; generation: number; session: number; revision: number }
  | { type: "approval"; execution: number; generation: number; revision: number; request: number }
  | { type: "cancel"; execution: number; generation: number; revision: number; request: number };

interface LiveExecution {
  execution: number;
  generation: number;
  agent: number;
  agentGeneration: number;
  session: number;
  revision: number;
}

/** What a host reads back from the durable row of an execution it
 * discharged, to install it again with `RecoveryInstall`. */
interface DurableRow {
  agent: number;
  agentGeneration: number;
  revision: number;
  status: number;
  phase: number;
  flags: number;
}

const U32_MAX = 0xffff_ffff;

export interface MessageStreamOptions {
  /** The revision the stream's first durable write reports, less one;
   * near 2^32 the stream's revisions wrap (default 100). */
  readonly firstRevision?: number;
  /** Pressure on the limits: now and then, `WaitersMax` + 2 `AttachWaiter`
   * messages in a row on one live execution, so its waiter list fills, and
   * one tool batch in three as large as the in-flight limit (default off: a
   * flood is thousands of messages). */
  readonly pressure?: boolean;
}

/** An `AttachWaiter` flood under way (see `MessageStreamOptions.floods`). */
interface Flood {
  readonly execution: number;
  readonly generation: number;
  remaining: number;
}

/** The fuzzer's memory of the stream: what it may refer to next. */
export class MessageStream {
  private readonly agents: { slot: number; generation: number }[] = [];
  private readonly retiredAgents: { slot: number; generation: number }[] = [];
  private readonly executions = new Map<string, LiveExecution>();
  private readonly retiredExecutions: { execution: number; generation: number }[] = [];
  private pending: Pending[] = [];
  /** The row of the execution the last `DischargeRecovery` named, kept
   * until the core answers; then, if released, in `discharged`. */
  private discharging: (DurableRow & { execution: number; generation: number }) | undefined;
  private readonly discharged: DurableRow[] = [];
  private nextRequest = 1;
  private nextRevision: number;
  private readonly pressure: boolean;
  private flood: Flood | undefined;
  /** The next message whatever the intent: what a host sends in answer to
   * an effect the core just emitted (see `learnApprovalCommit`,
   * `learnStartHead`). */
  private answer: Message | undefined;
  /** Provider calls started, under pressure (see `learnPressure`). */
  private providerCalls = 0;

  constructor(options: MessageStreamOptions = {}) {
    this.nextRevision = options.firstRevision ?? 100;
    this.pressure = options.pressure ?? false;
  }

  private tables: CoreSnapshot | undefined;

  /** Builds the next message from an intent and the tables as they are
   * now (used to aim session events at the phase an execution is in). */
  next(intent: Intent, tables?: CoreSnapshot): Message {
    this.tables = tables;
    const flooding = this.continueFlood();
    if (flooding) return flooding;
    const answer = this.answer;
    this.answer = undefined;
    if (answer) return answer;
    if (this.pressure && intent.kind % 97 === 13) {
      const started = this.startFlood(intent);
      if (started) return started;
    }
    const builders = this.builders();
    return builders[intent.kind % builders.length]!(intent);
  }

  /** Learns from the effects the core answered with. */
  observe(message: Message, effects: readonly CoreEffect[]): void {
    for (const effect of effects) {
      this.learn(message, effect);
      this.learnPressure(effect);
    }
  }

  private builders(): ((intent: Intent) => Message)[] {
    const pressure: ((intent: Intent) => Message)[] = this.pressure ? Array.from({ length: 8 }, () => (i: Intent) => this.fillInFlight(i)) : [];
    return [
      ...pressure,
      (i) => this.registerAgent(i),
      (i) => this.start(i),
      (i) => this.start(i),
      (i) => this.completePending(i),
      (i) => this.completePending(i),
      (i) => this.completePending(i),
      (i) => this.completePending(i),
      (i) => this.completePending(i),
      (i) => this.completePending(i),
      (i) => this.completePending(i),
      (i) => this.sessionEvent(i),
      (i) => this.sessionEvent(i),
      (i) => this.sessionEvent(i),
      (i) => this.sessionEvent(i),
      (i) => this.sessionFinished(i),
      (i) => this.sessionFinished(i),
      (i) => this.advance(i),
      (i) => this.advance(i),
      (i) => this.advance(i),
      (i) => this.advance(i),
      (i) => this.advance(i),
      (i) => this.advance(i),
      (i) => this.advance(i),
      (i) => this.advance(i),
      (i) => this.resume(i),
      (i) => this.cancelSuspended(i),
      (i) => this.recoveryInstall(i),
      (i) => this.continueRecovered(i),
      (i) => this.retiredKind(i),
      // Twice: a discharge needs a chain of steps (install, a refused
      // continuation, the discharge) that the short streams rarely finish.
      (i) => this.dischargeRecovery(i),
      (i) => this.dischargeRecovery(i),
      (i) => this.dischargeAgentRecovery(i),
      (i) => this.agentLifecycle(i),
      (i) => this.attachOrCancel(i),
      (i) => this.refuseSubmission(i),
      (i) => this.setDraining(i),
      (i) => this.garbage(i),
      // The conversation lifecycle (docs/decisions/0062).
      ...Array.from({ length: 6 }, () => (i: Intent) => this.conversation(i)),
    ];
  }

  // -- message builders ------------------------------------------------------

  /** Drives executions to the in-flight limit: the model asks for tools
   * while its call is still in flight, the batch is as large as the limit
   * (refused with `InFlightFull` when the call has not settled), and once a
   * batch fills the limit, the events that ask for the next barrier while
   * it is still in flight (refused too). */
  private fillInFlight(intent: Intent): Message {
    const live = [...this.executions.values()].filter((candidate) => {
      const record = this.tables?.executions[candidate.execution];
      return record?.generation === candidate.generation && record.agentSlotPlusOne !== 0 && record.session === candidate.session && record.session !== 0;
    });
    const recordOf = (candidate: LiveExecution) => this.tables!.executions[candidate.execution]!;
    const full = live.find(
      (candidate) =>
        recordOf(candidate).inFlight >= Limit.InFlightMax - 1
        && (recordOf(candidate).phase === Phase.DispatchingTools || recordOf(candidate).phase === Phase.RecordingToolResults),
    );
    if (full) {
      const event = recordOf(full).phase === Phase.DispatchingTools ? SessionEventKind.ToolsCompleted : SessionEventKind.StateCompleted;
      return message(MessageKind.SessionEvent, full.execution, full.generation, full.session, event);
    }
    const tools = this.pending.filter((item): item is Extract<Pending, { type: "provider" | "tool" }> => item.type === "tool");
    const item = tools.find((candidate) => (this.tables?.executions[candidate.execution]?.inFlight ?? 0) >= 2) ?? tools[0];
    if (item) {
      this.pending.splice(this.pending.indexOf(item), 1);
      return this.toolDispatchReady(item);
    }
    const calling = live.find(
      (candidate) =>
        recordOf(candidate).phase === Phase.CallingLlm
        && recordOf(candidate).inFlight >= 1
        && !this.pending.some((pending) => pending.type === "provider" && pending.execution === candidate.execution),
    );
    if (calling) return message(MessageKind.SessionEvent, calling.execution, calling.generation, calling.session, SessionEventKind.LlmCompletedWithTools);
    return this.advance(intent);
  }

  /** Starts a flood on the live execution with the most waiters. */
  private startFlood(intent: Intent): Message | undefined {
    const live = [...this.executions.values()].filter((candidate) => {
      const record = this.tables?.executions[candidate.execution];
      return record?.generation === candidate.generation && record.agentSlotPlusOne !== 0 && record.waiters < Limit.WaitersMax;
    });
    if (live.length === 0) return undefined;
    const waitersOf = (candidate: LiveExecution): number => this.tables?.executions[candidate.execution]?.waiters ?? 0;
    const target = live.reduce((best, candidate) => (waitersOf(candidate) > waitersOf(best) ? candidate : best), live[intent.pick % live.length]!);
    this.flood = { execution: target.execution, generation: target.generation, remaining: Limit.WaitersMax + 2 };
    return this.continueFlood();
  }

  /** The next message of a flood under way, while its execution lives. */
  private continueFlood(): Message | undefined {
    const flood = this.flood;
    if (!flood) return undefined;
    const record = this.tables?.executions[flood.execution];
    if (flood.remaining === 0 || record?.generation !== flood.generation || record.agentSlotPlusOne === 0) {
      this.flood = undefined;
      return undefined;
    }
    flood.remaining -= 1;
    return message(MessageKind.AttachWaiter, flood.execution, flood.generation, this.request());
  }

  private registerAgent(intent: Intent): Message {
    return message(MessageKind.RegisterAgent, intent.variant % 7 === 0 ? 1 : 0);
  }

  private start(intent: Intent): Message {
    if (this.agents.length === 0 && intent.variant % 10 !== 0) return this.registerAgent(intent);
    const agent = this.pickAgent(intent);
    // A closed agent admits nothing: usually purge it instead (refused while
    // it holds an admission), so its slot serves a new agent and a stream
    // whose agents were all closed does not stall on refused starts.
    const record = this.tables?.agents[agent.slot];
    if (record?.generation === agent.generation && record.lifecycle === AgentLifecycle.Closed && intent.variant % 4 !== 0) {
      return message(MessageKind.PurgeAgent, agent.slot, agent.generation);
    }
    const cancelled = intent.variant % 11 === 0 ? 1 : intent.variant % 13 === 0 ? 5 : 0;
    return message(MessageKind.Start, agent.slot, agent.generation, this.request(), cancelled);
  }

  private completePending(intent: Intent): Message {
    if (this.pending.length === 0) return this.start(intent);
    const index = intent.pick % this.pending.length;
    const item = this.pending[index]!;
    // One in eight completions is delivered again later (a duplicate); a
    // stale copy (see `completion`) leaves the genuine result to come.
    if (intent.variant % 8 !== 0 && !isStale(intent)) this.pending.splice(index, 1);
    return this.completion(item, intent);
  }

  /** Moves one execution (or one admission) along its happy path, as a
   * healthy host would: complete its pending submission successfully, else
   * post the event its phase expects, else finish the session. */
  private advance(intent: Intent): Message {
    if (this.discharged.length > 0) return this.reinstall();
    const live = this.pickExecution({ ...intent, variant: 1 });
    const owned = live ? this.pending.filter((item) => "execution" in item && item.execution === live.execution) : [];
    const prepares = this.pending.filter((item) => item.type === "prepare");
    const clean: Intent = { ...intent, variant: 2, noise: 0 };
    if (owned.length > 0 && (prepares.length === 0 || intent.pick % 3 !== 0)) {
      const item = owned[0]!;
      this.pending.splice(this.pending.indexOf(item), 1);
      // A terminal commit may end any of the five ways (weights sum to 11).
      return this.completion(item, item.type === "terminal" ? { ...clean, noise: intent.noise % 11 } : clean);
    }
    if (prepares.length > 0) {
      const item = prepares[intent.pick % prepares.length]!;
      this.pending.splice(this.pending.indexOf(item), 1);
      return this.completion(item, clean);
    }
    if (!live) return this.start(intent);
    const record = this.tables?.executions[live.execution];
    if (record?.phase === Phase.CallingLlm && intent.noise % 3 === 0) {
      const ending = intent.noise % 2 === 0 ? SessionEnding.Completed : SessionEnding.Suspended;
      return message(MessageKind.SessionFinished, live.execution, live.generation, live.session, ending);
    }
    if (record && record.session === 0 && record.status !== ExecutionStatus.Suspended) {
      // Waiting for recovery: the host discharges it and installs it again
      // from its durable row (decision 0013), as env.recover() does.
      const agent = this.tables?.agents[record.agentSlotPlusOne - 1];
      if (agent?.admissionState === AdmissionState.RecoveryRequired && record.inFlight === 0) return this.dischargeRecovery({ ...intent, variant: 1 });
      return this.continuationFor(live, record.status, record.phase, record.flags);
    }
    if (record?.phase === Phase.Suspended && record.session === 0) {
      if (intent.noise % 4 === 0) return message(MessageKind.CancelSuspended, live.execution, live.generation, this.request());
      return message(MessageKind.Resume, live.execution, live.generation, live.agent, live.agentGeneration, this.request(), 1, intent.noise % 2);
    }
    if (record?.phase === Phase.Suspended) {
      return message(MessageKind.SessionFinished, live.execution, live.generation, live.session, SessionEnding.Suspended);
    }
    return message(MessageKind.SessionEvent, live.execution, live.generation, live.session, this.fittingEvent(live, intent));
  }

  /** The recovery continuation a host would choose from the saved facts
   * (host/runtime/recovery.ts): `None` for a state no store writes. */
  private continuationFor(live: LiveExecution, status: number, phase: number, flags: number): Message {
    const continuation =
      status !== ExecutionStatus.Active
        ? Continuation.None
        : phase === Phase.CallingLlm
          ? Continuation.RecallModel
          : phase === Phase.DispatchingTools
            ? Continuation.FrameworkTools
            : phase === Phase.Resuming
              ? (flags & ExecutionFlag.ApprovalGranted) === 0
                ? Continuation.ApprovalRejection
                : Continuation.FrameworkTools
              : Continuation.None;
    return message(MessageKind.ContinueRecovered, live.execution, live.generation, live.revision, continuation, 0, this.request());
  }

  private completion(item: Pending, intent: Intent): Message {
    const stale = isStale(intent);
    switch (item.type) {
      case "prepare": {
        // Under pressure, no outcome that leaves the agent's admission held
        // for recovery with no execution (nothing in the core releases it),
        // so the few agents of a long stream stay usable.
        const outcome = this.pressure
          ? pickWeighted(intent.noise, [PreparationOutcome.Active, 8], [PreparationOutcome.Terminal, 1], [PreparationOutcome.NotEstablished, 1])
          : pickWeighted(
              intent.noise,
              [PreparationOutcome.Active, 6],
              [PreparationOutcome.Terminal, 1],
              [PreparationOutcome.NotEstablished, 1],
              [PreparationOutcome.OutcomeUnknown, 1],
              [PreparationOutcome.StoreFailed, 1],
              [9, 1],
            );
        // The sixth argument is retired (was flags): sometimes noise, ignored.
        const retired = intent.variant % 17 === 4 ? intent.noise : 0;
        return message(
          MessageKind.InitialPreparationReady,
          item.agent,
          item.generation,
          stale ? item.token + 1 : item.token,
          outcome,
          this.revision(),
          retired,
          item.request,
        );
      }
      case "provider":
      case "tool": {
        const outcome = pickWeighted(
          intent.noise,
          [CommitOutcome.Committed, 8],
          [CommitOutcome.StoreFailed, 1],
          [CommitOutcome.RehydrationRequired, 1],
          [0, 1],
        );
        const newRevision = intent.variant % 19 === 5 ? item.revision : this.revision();
        const kind = item.type === "provider" ? MessageKind.ProviderDispatchReady : MessageKind.ToolDispatchReady;
        // Now and then a batch that fills the in-flight limit, or exceeds it.
        const full = this.pressure ? intent.variant % 3 === 0 : intent.variant % 29 === 11;
        const toolCount = intent.variant % 23 === 6 ? 0 : full ? Limit.InFlightMax : intent.variant % 31 === 12 ? Limit.InFlightMax + 1 : 1 + (intent.pick % 3);
        return message(kind, item.execution, item.generation, item.session, stale ? item.revision + 1 : item.revision, outcome, newRevision, toolCount);
      }
      case "operation":
        return message(MessageKind.OperationSettled, item.execution, item.generation);
      case "deferred":
        return message(MessageKind.DeferredTerminal, item.execution, item.generation, stale ? item.session + 1 : item.session);
      case "terminal": {
        const outcome = pickWeighted(
          intent.noise,
          [OutcomeType.Completed, 4],
          [OutcomeType.Failed, 2],
          [OutcomeType.Suspended, 3],
          [OutcomeType.HandedOff, 1],
          [OutcomeType.CoordinationWait, 1],
          [OutcomeType.StoreFailed, 1],
          [12, 1],
        );
        return message(
          MessageKind.TerminalCommitReady,
          item.execution,
          item.generation,
          item.session,
          stale ? item.revision - 1 : item.revision,
          outcome,
          this.revision(),
        );
      }
      case "cancel": {
        const outcome = pickWeighted(
          intent.noise,
          [CommitOutcome.Committed, 6],
          [CommitOutcome.StoreFailed, 1],
          [CommitOutcome.RehydrationRequired, 1],
          [7, 1],
        );
        return message(
          MessageKind.CancelCommitReady,
          item.execution,
          item.generation,
          stale ? item.revision + 1 : item.revision,
          outcome,
          this.revision(),
          item.request,
        );
      }
      case "approval": {
        const outcome = pickWeighted(
          intent.noise,
          [CommitOutcome.Committed, 6],
          [CommitOutcome.StoreFailed, 1],
          [CommitOutcome.RehydrationRequired, 1],
          [7, 1],
        );
        return message(
          MessageKind.ResumeCommitReady,
          item.execution,
          item.generation,
          stale ? item.revision + 1 : item.revision,
          outcome,
          this.revision(),
          intent.pick % 2,
          item.request,
        );
      }
    }
  }

  private sessionEvent(intent: Intent): Message {
    const live = this.pickExecution(intent);
    if (!live) return this.start(intent);
    const event = intent.variant % 5 === 0 ? 1 + (intent.noise % 7) : this.fittingEvent(live, intent);
    const session = intent.variant % 9 === 2 ? live.session + 1 : live.session;
    return message(MessageKind.SessionEvent, live.execution, live.generation, session, event);
  }

  /** An event the execution's phase accepts, as a session runner would
   * post it. */
  private fittingEvent(live: LiveExecution, intent: Intent): number {
    const record = this.tables?.executions[live.execution];
    switch (record?.phase) {
      case Phase.CallingLlm:
        return intent.noise % 4 === 0 ? SessionEventKind.ApprovalRequired : SessionEventKind.LlmCompletedWithTools;
      case Phase.DispatchingTools:
        return SessionEventKind.ToolsCompleted;
      case Phase.RecordingToolResults:
        return SessionEventKind.StateCompleted;
      case Phase.Resuming:
        return intent.noise % 2 === 0 ? SessionEventKind.ApprovalGranted : SessionEventKind.ApprovalRejected;
      default:
        return 1 + (intent.noise % 7);
    }
  }

  private sessionFinished(intent: Intent): Message {
    const live = this.pickExecution(intent);
    if (!live) return this.start(intent);
    const ending = pickWeighted(
      intent.noise,
      [SessionEnding.Completed, 4],
      [SessionEnding.Failed, 1],
      [SessionEnding.Suspended, 3],
      [SessionEnding.HandedOff, 1],
      [SessionEnding.Cancelled, 2],
      [SessionEnding.TimedOut, 1],
      [SessionEnding.CoordinationWait, 1],
      [0, 1],
    );
    return message(MessageKind.SessionFinished, live.execution, live.generation, live.session, ending);
  }

  /** The pending wait's kind and the decision's (decisions 0075, 0077,
   * 0079): mostly an approval decided; sometimes a typed wait given its
   * value, an event wait its signal, a child's wait resumed by its child's
   * end, a kind that does not match, or a value its schema refused. */
  private waitFacts(intent: Intent): number {
    const child = ResumeFact.PendingWaitsForChild;
    const timer = ResumeFact.PendingWaitsForClock | ResumeFact.PendingHasDeadline;
    const kinds = [
      0,
      0,
      0,
      ResumeFact.PendingWaitsForInput | ResumeFact.GivesValue,
      ResumeFact.PendingWaitsForInput,
      ResumeFact.GivesValue,
      // Keyed event waits (decision 0077): a signal, live or stored early,
      // a signal for another kind, a stored fact without a signal.
      ResumeFact.PendingWaitsForEvent | ResumeFact.GivesSignal,
      ResumeFact.PendingWaitsForEvent | ResumeFact.GivesSignal | ResumeFact.SignalStored,
      ResumeFact.PendingWaitsForEvent | ResumeFact.GivesValue,
      ResumeFact.PendingWaitsForInput | ResumeFact.GivesSignal,
      ResumeFact.PendingWaitsForEvent | ResumeFact.SignalStored,
      child | ResumeFact.GivesChildOutcome,
      child,
      ResumeFact.GivesChildOutcome,
      child | ResumeFact.GivesValue,
      ResumeFact.PendingWaitsForEvent | ResumeFact.GivesChildOutcome,
      // Decision 0076: a timer fired, a timer given a decision, a timeout
      // of a typed wait, the clock answering a wait with no due time.
      timer | ResumeFact.ClockAnswers,
      timer,
      ResumeFact.PendingWaitsForInput | ResumeFact.PendingHasDeadline | ResumeFact.ClockAnswers,
      ResumeFact.ClockAnswers,
      timer | ResumeFact.ClockAnswers | ResumeFact.GivesValue,
    ];
    const kind = kinds[(intent.noise >> 3) % kinds.length]!;
    return kind | (intent.noise % 17 === 3 ? ResumeFact.ValueRefused : 0);
  }

  private resume(intent: Intent): Message {
    const live = this.pickExecution(intent);
    if (!live) return this.start(intent);
    // The host's facts (`ResumeFact` bits): mostly the pending approval's
    // id; sometimes another's, the suspension being committed, sent again
    // after a recovery, any mix of them; now and then malformed (≥ End).
    const facts =
      intent.variant % 29 === 1
        ? ResumeFact.End + (intent.noise % 3)
        : intent.variant % 6 === 0
          ? (intent.noise >> 2) % ResumeFact.End
          : ResumeFact.MatchesPending
            | (intent.variant % 5 === 0 ? ResumeFact.MatchesCommittingSuspension : 0)
            | (intent.variant % 7 === 0 ? ResumeFact.AfterRecovery : 0)
            | this.waitFacts(intent);
    // Sent again while a commit is under way: the same decision, or another (2: malformed).
    const same = intent.noise % 31 === 5 ? 2 : intent.noise % 2;
    return message(MessageKind.Resume, live.execution, live.generation, live.agent, live.agentGeneration, this.request(), facts, same);
  }

  /** Cancel by id of a suspended execution (decision 0026); mostly a
   * suspended one, sometimes any live one (refused). */
  private cancelSuspended(intent: Intent): Message {
    const live = this.pickExecution(intent);
    if (!live) return this.start(intent);
    return message(MessageKind.CancelSuspended, live.execution, live.generation, this.request());
  }

  private recoveryInstall(intent: Intent): Message {
    if (intent.variant % 3 === 0 && this.discharged.length > 0) return this.reinstall();
    if (this.agents.length === 0 && intent.variant % 10 !== 0) return this.registerAgent(intent);
    const agent = this.pickAgent(intent);
    const status = pickWeighted(
      intent.noise,
      [ExecutionStatus.Active, 5],
      [ExecutionStatus.Preparing, 2],
      [ExecutionStatus.Suspended, 2],
      [ExecutionStatus.Terminal, 1],
    );
    const phase =
      status === ExecutionStatus.Suspended && intent.variant % 5 !== 0
        ? Phase.Suspended
        : status === ExecutionStatus.Preparing && intent.variant % 5 !== 0
          ? Phase.Preparing
          : 1 + (intent.pick % 12);
    const flags = (intent.variant % 5 === 2 ? ExecutionFlag.ApprovalGranted : 0) | (intent.variant % 31 === 3 ? 1 : 0) | (intent.variant % 37 === 4 ? 8 : 0);
    return message(MessageKind.RecoveryInstall, agent.slot, agent.generation, this.revision(), status, phase, flags, this.request());
  }

  private continueRecovered(intent: Intent): Message {
    const live = this.pickExecution(intent);
    if (!live) return this.recoveryInstall(intent);
    // Every number up to one past the enum, retired ones and None included.
    const continuation = intent.variant % 17 === 0 ? 9 : intent.noise % (Continuation.RecallModel + 1);
    const retired = intent.pick % 3 === 0 ? intent.noise : 0;
    return message(MessageKind.ContinueRecovered, live.execution, live.generation, live.revision, continuation, retired, this.request());
  }

  /** A retired message kind (16, 17: preparation recovery; decision 0022)
   * with the arguments it once took: unknown to both machines. */
  private retiredKind(intent: Intent): Message {
    const live = this.pickExecution(intent);
    if (!live) return this.recoveryInstall(intent);
    return message(16 + (intent.variant % 2), live.execution, live.generation, live.session, live.revision, 1, live.revision + 1, this.request());
  }

  /** Mostly aimed at an execution waiting for recovery (the host's use),
   * sometimes at any live, stale or random one. */
  private dischargeRecovery(intent: Intent): Message {
    // The host installs what it discharged again, usually right away.
    if (intent.variant % 4 !== 0 && this.discharged.length > 0) return this.reinstall();
    this.discharging = undefined;
    const waiting = this.waitingForRecovery();
    if (waiting.length > 0 && intent.variant % 5 !== 0) {
      const live = waiting[intent.pick % waiting.length]!;
      this.noteDischarging(live);
      return message(MessageKind.DischargeRecovery, live.execution, live.generation);
    }
    if (intent.variant % 13 === 4) return message(MessageKind.DischargeRecovery, intent.pick % 4, intent.noise % 3, intent.noise % 5);
    // Nothing waits for recovery: usually make something wait, else name
    // any live or stale execution — sometimes with its durable row read at
    // its revision or a later one (a suspension superseded elsewhere).
    if (intent.variant % 5 !== 0) return this.refuseContinuation(intent);
    const live = this.pickExecution(intent);
    if (!live) return this.start(intent);
    const record = this.tables?.executions[live.execution];
    const rowRevision = record !== undefined && intent.variant % 3 === 0 ? record.revision + (intent.noise % 2) : 0;
    if (rowRevision > 0) this.noteDischarging(live);
    return message(MessageKind.DischargeRecovery, live.execution, live.generation, rowRevision);
  }

  /** The row a discharge of `live` would be installed again from. */
  private noteDischarging(live: LiveExecution): void {
    const record = this.tables?.executions[live.execution];
    if (!record) return;
    this.discharging = {
      execution: live.execution,
      generation: live.generation,
      agent: live.agent,
      agentGeneration: live.agentGeneration,
      revision: record.revision,
      status: record.status,
      phase: record.phase,
      flags: record.flags & ExecutionFlagMask.HostSettable,
    };
  }

  /** A continuation no durable phase accepts (`None`, as the host names a
   * state no store writes) for an execution without a session: the core
   * requires its recovery. Without such an execution, a recovery installs
   * one. */
  private refuseContinuation(intent: Intent): Message {
    const tables = this.tables;
    const idle = [...this.executions.values()].filter((live) => {
      const record = tables?.executions[live.execution];
      return record?.generation === live.generation && record.agentSlotPlusOne !== 0 && record.session === 0;
    });
    if (idle.length === 0) return this.recoveryInstall(intent);
    const live = idle[intent.pick % idle.length]!;
    const revision = tables?.executions[live.execution]?.revision ?? live.revision;
    return message(MessageKind.ContinueRecovered, live.execution, live.generation, revision, Continuation.None, 0, this.request());
  }

  /** `RecoveryInstall` of the oldest discharged execution's durable row. */
  private reinstall(): Message {
    const row = this.discharged.shift()!;
    return message(MessageKind.RecoveryInstall, row.agent, row.agentGeneration, row.revision, row.status, row.phase, row.flags, this.request());
  }

  /** Live executions whose agent's admission is `recovery_required`. */
  private waitingForRecovery(): LiveExecution[] {
    const tables = this.tables;
    if (!tables) return [];
    return [...this.executions.values()].filter((live) => {
      const record = tables.executions[live.execution];
      if (!record || record.generation !== live.generation || record.agentSlotPlusOne === 0) return false;
      return tables.agents[record.agentSlotPlusOne - 1]?.admissionState === AdmissionState.RecoveryRequired;
    });
  }

  /** Mostly aimed at an agent held for recovery with no execution (a
   * preparation whose outcome was not learnt: the host's use), sometimes
   * at any agent. */
  private dischargeAgentRecovery(intent: Intent): Message {
    const tables = this.tables;
    const held = tables
      ? this.agents.filter((agent) => {
          const record = tables.agents[agent.slot];
          return record?.generation === agent.generation && record.admissionState === AdmissionState.RecoveryRequired && record.executionSlotPlusOne === 0;
        })
      : [];
    const agent = held.length > 0 && intent.variant % 5 !== 0 ? held[intent.pick % held.length]! : this.pickAgent(intent);
    return message(MessageKind.DischargeAgentRecovery, agent.slot, agent.generation);
  }

  private agentLifecycle(intent: Intent): Message {
    const agent = this.pickAgent(intent);
    return message(intent.variant % 6 === 0 ? MessageKind.CloseAgent : MessageKind.PurgeAgent, agent.slot, agent.generation);
  }

  private attachOrCancel(intent: Intent): Message {
    const live = this.pickExecution(intent);
    if (!live) return this.start(intent);
    return intent.variant % 2 === 0
      ? message(MessageKind.AttachWaiter, live.execution, live.generation, this.request())
      : message(MessageKind.CancelRequested, live.execution, live.generation);
  }

  private refuseSubmission(intent: Intent): Message {
    if (this.pending.length === 0) return this.start(intent);
    const index = intent.pick % this.pending.length;
    const item = this.pending[index]!;
    const submission = submissionOf(item);
    if (submission === Submission.None) return this.completion(item, intent);
    // Now and then the retired number 5 (preparation recovery): refused, and
    // the submission stays pending.
    const retired = intent.variant % 19 === 7;
    if (!retired) this.pending.splice(index, 1);
    if (item.type === "prepare") {
      return message(MessageKind.SubmissionRefused, retired ? 5 : submission, item.agent, item.generation, item.token, item.request);
    }
    const session = "session" in item ? item.session : 0;
    const request = "request" in item ? item.request : 0;
    return message(MessageKind.SubmissionRefused, retired ? 5 : submission, item.execution, item.generation, session, request);
  }

  private setDraining(intent: Intent): Message {
    return message(MessageKind.SetDraining, intent.variant % 7 === 0 ? 1 : intent.variant % 41 === 5 ? 2 : 0);
  }

  /** Arbitrary integers, including out-of-range kinds and values. */
  private garbage(intent: Intent): Message {
    const words = [intent.pick, intent.variant, intent.noise, U32_MAX, intent.pick ^ intent.noise, 0, intent.noise >>> 3];
    return message(intent.noise % (MessageKindLimit.End + 2), ...words);
  }

  /** A conversation lifecycle message fitting the phase its record is in. */
  private conversation(intent: Intent): Message {
    if (this.agents.length === 0) return this.registerAgent(intent);
    const agent = this.pickAgent(intent);
    const record = this.tables?.agents[agent.slot]?.generation === agent.generation ? this.tables.conversations[agent.slot] : undefined;
    return conversationMessage(intent, agent, record, this.request());
  }

  // -- what the stream can refer to -------------------------------------------

  private pickAgent(intent: Intent): { slot: number; generation: number } {
    if (intent.variant % 15 === 7 && this.retiredAgents.length > 0) {
      return this.retiredAgents[intent.pick % this.retiredAgents.length]!;
    }
    if (this.agents.length === 0) return { slot: intent.pick % 4, generation: 1 };
    return this.agents[intent.pick % this.agents.length]!;
  }

  private pickExecution(intent: Intent): LiveExecution | undefined {
    if (intent.variant % 14 === 9 && this.retiredExecutions.length > 0) {
      const retired = this.retiredExecutions[intent.pick % this.retiredExecutions.length]!;
      return { ...retired, agent: 0, agentGeneration: 1, session: 1, revision: 100 };
    }
    const live = [...this.executions.values()];
    if (live.length === 0) return undefined;
    return live[intent.pick % live.length];
  }

  private request(): number {
    return this.nextRequest++;
  }

  private revision(): number {
    this.nextRevision += 1;
    return this.nextRevision;
  }

  /** The tool barrier of `item` committed: its batch may be dispatched. */
  private toolDispatchReady(item: Extract<Pending, { type: "provider" | "tool" }>): Message {
    return message(
      MessageKind.ToolDispatchReady,
      item.execution,
      item.generation,
      item.session,
      item.revision,
      CommitOutcome.Committed,
      this.revision(),
      Limit.InFlightMax,
    );
  }

  /** Now and then, the decision that asked for this approval commit is
   * sent again as the next message, while the commit is under way: by the
   * request id, one in three the same decision (the host found it equal: it
   * follows the commit, `FollowResume`) and one in three another (refused
   * `ResumeInProgress`). Left to the random builders, a decision met that
   * window in about 1 stream in 100, so whether a run of 300 streams saw
   * `FollowResume` hung on its seed. */
  private learnApprovalCommit(sent: Message, request: number): void {
    if (sent[0] !== MessageKind.Resume || request % 3 === 2) return;
    const sameAsCommitting = request % 3 === 0 ? 1 : 0;
    this.answer = message(MessageKind.Resume, sent[1], sent[2], sent[3], sent[4], this.request(), sent[6], sameAsCommitting);
  }

  /** A head the core asks to start is admitted as the next message, as the
   * host's queue does (its `Admit` from the queue head): left to the random
   * builders, a head was let start in about 1 stream in 30, and settled
   * (`HeadSettled` accepted) in 1 in 60, so whether a run of 300 streams
   * accepted every message kind hung on its seed. */
  private learnStartHead(agentSlot: number): void {
    const agent = this.agents.find((candidate) => candidate.slot === agentSlot);
    if (!agent) return;
    this.answer = message(MessageKind.Admit, agent.slot, agent.generation, this.request(), AdmissionSource.QueueHead, BusyPolicy.Enqueue, 1);
  }

  /** A head the store failed is offered again once its wait is over, as
   * the host's timer does (`HeadRetryDue`); the wait itself is not modelled. */
  private learnHeadRetry(agentSlot: number): void {
    const agent = this.agents.find((candidate) => candidate.slot === agentSlot);
    if (!agent) return;
    this.answer = message(MessageKind.HeadRetryDue, agent.slot, agent.generation);
  }

  /** A recovery the core says is due (a retake on demand found an
   * execution held for recovery) is asked for as the next message, as the
   * host's pipeline does (`RecoveryRequested` with that cause). */
  private learnRecoveryDue(agentSlot: number, cause: number): void {
    const agent = this.agents.find((candidate) => candidate.slot === agentSlot);
    if (!agent) return;
    this.answer = message(MessageKind.RecoveryRequested, agent.slot, agent.generation, cause, RecoveryFact.Leasing | RecoveryFact.RecoversByItself);
  }

  /** Under pressure, one provider call in two is answered at once by a
   * model asking for tools (its call still in flight), and the tool barrier
   * that follows by a batch as large as the in-flight limit: refused
   * `InFlightFull`. Left to the random builders among a flood's thousands
   * of `AttachWaiter`, about 2 flood streams in 5 never reached
   * `InFlightFull`, so whether a run of 6 flood streams did hung on its
   * seed. */
  private learnPressure(effect: CoreEffect): void {
    if (!this.pressure || this.answer !== undefined) return;
    if (effect.kind === EffectKind.StartProviderCall) {
      this.providerCalls += 1;
      const live = [...this.executions.values()].find((candidate) => candidate.execution === effect.execution);
      if (live === undefined || this.providerCalls % 2 === 0) return;
      this.answer = message(MessageKind.SessionEvent, live.execution, live.generation, effect.session, SessionEventKind.LlmCompletedWithTools);
    } else if (effect.kind === EffectKind.SubmitToolBarrier) {
      const item = this.pending.find(
        (candidate) => candidate.type === "tool" && candidate.execution === effect.execution && candidate.session === effect.session,
      );
      if (item?.type !== "tool") return;
      this.pending.splice(this.pending.indexOf(item), 1);
      this.answer = this.toolDispatchReady(item);
    }
  }

  private learn(sent: Message, effect: CoreEffect): void {
    switch (effect.kind) {
      case EffectKind.AgentRegistered:
        this.agents.push({ slot: effect.agent, generation: effect.generation });
        break;
      case EffectKind.SubmitPrepare: {
        const agent = this.agents.find((candidate) => candidate.slot === effect.agent);
        this.pending.push({ type: "prepare", agent: effect.agent, generation: agent?.generation ?? 0, token: effect.ownerToken, request: effect.request });
        break;
      }
      case EffectKind.ExecutionInstalled: {
        const agent = this.agents.find((candidate) => candidate.slot === installingAgent(sent));
        this.executions.set(key(effect.execution, effect.generation), {
          execution: effect.execution,
          generation: effect.generation,
          agent: agent?.slot ?? 0,
          agentGeneration: agent?.generation ?? 0,
          session: 0,
          revision: installRevision(sent),
        });
        break;
      }
      case EffectKind.StartSession:
      case EffectKind.ContinueSession:
        this.withExecution(effect.execution, (live) => {
          live.session = effect.session;
        });
        break;
      case EffectKind.ResumeSession:
        this.withExecution(effect.execution, (live) => {
          live.session = effect.session;
          live.revision = sent[5];
        });
        break;
      case EffectKind.SubmitProviderBarrier:
      case EffectKind.SubmitToolBarrier:
        this.withExecution(effect.execution, (live) => {
          live.session = effect.session;
          live.revision = effect.expectedRevision;
          this.pending.push({
            type: effect.kind === EffectKind.SubmitProviderBarrier ? "provider" : "tool",
            execution: live.execution,
            generation: live.generation,
            session: effect.session,
            revision: effect.expectedRevision,
          });
        });
        break;
      case EffectKind.StartProviderCall:
      case EffectKind.StartToolBatch: {
        const count = effect.kind === EffectKind.StartToolBatch ? effect.toolCount : 1;
        this.withExecution(effect.execution, (live) => {
          live.revision = sent[6];
          for (let index = 0; index < count; index += 1) this.pending.push({ type: "operation", execution: live.execution, generation: live.generation });
        });
        break;
      }
      case EffectKind.PostDeferredTerminal:
        this.withExecution(effect.execution, (live) => {
          this.pending.push({ type: "deferred", execution: live.execution, generation: live.generation, session: effect.session });
        });
        break;
      case EffectKind.SubmitTerminalCommit:
        this.withExecution(effect.execution, (live) => {
          live.revision = effect.expectedRevision;
          this.pending.push({
            type: "terminal",
            execution: live.execution,
            generation: live.generation,
            session: effect.session,
            revision: effect.expectedRevision,
          });
        });
        break;
      case EffectKind.SubmitCancelCommit:
        this.withExecution(effect.execution, (live) => {
          this.pending.push({
            type: "cancel",
            execution: live.execution,
            generation: live.generation,
            revision: effect.expectedRevision,
            request: effect.request,
          });
        });
        break;
      case EffectKind.StartHead:
        this.learnStartHead(effect.agent);
        break;
      case EffectKind.RetryHeadAfter:
        this.learnHeadRetry(effect.agent);
        break;
      case EffectKind.RecoveryDue:
        this.learnRecoveryDue(effect.agent, effect.cause);
        break;
      case EffectKind.SubmitApprovalCommit:
        this.withExecution(effect.execution, (live) => {
          this.pending.push({
            type: "approval",
            execution: live.execution,
            generation: live.generation,
            revision: effect.expectedRevision,
            request: effect.request,
          });
        });
        this.learnApprovalCommit(sent, effect.request);
        break;
      case EffectKind.DeliverOutcome:
        if (effect.outcome === OutcomeType.Suspended) {
          this.withExecution(effect.execution, (live) => {
            live.session = 0;
            live.revision = sent[6];
          });
        }
        break;
      case EffectKind.ReleaseExecution: {
        this.executions.delete(key(effect.execution, effect.generation));
        this.retiredExecutions.push({ execution: effect.execution, generation: effect.generation });
        const row = this.discharging;
        if (sent[0] === MessageKind.DischargeRecovery && row?.execution === effect.execution && row.generation === effect.generation) {
          this.discharged.push(row);
        }
        break;
      }
      default:
        break;
    }
    if (sent[0] === MessageKind.PurgeAgent) this.retireAgent(sent[1], sent[2]);
  }

  private retireAgent(slot: number, generation: number): void {
    const index = this.agents.findIndex((agent) => agent.slot === slot && agent.generation === generation);
    if (index >= 0) this.retiredAgents.push(...this.agents.splice(index, 1));
  }

  /** Purges take effect only when the core accepted them. */
  confirmPurge(sent: Message, code: number): void {
    if (sent[0] === MessageKind.PurgeAgent && code === 0) this.retireAgent(sent[1], sent[2]);
  }

  private withExecution(execution: number, update: (live: LiveExecution) => void): void {
    for (const live of this.executions.values()) if (live.execution === execution) update(live);
  }
}

function message(kind: number, a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0): Message {
  return [kind, a >>> 0, b >>> 0, c >>> 0, d >>> 0, e >>> 0, f >>> 0, g >>> 0];
}

function key(execution: number, generation: number): string {
  return `${execution}:${generation}`;
}

function installingAgent(sent: Message): number {
  return sent[0] === MessageKind.InitialPreparationReady || sent[0] === MessageKind.RecoveryInstall ? sent[1] : -1;
}

function installRevision(sent: Message): number {
  return sent[0] === MessageKind.InitialPreparationReady ? sent[5] : sent[0] === MessageKind.RecoveryInstall ? sent[3] : 0;
}

function submissionOf(item: Pending): number {
  switch (item.type) {
    case "prepare":
      return Submission.Prepare;
    case "provider":
      return Submission.ProviderBarrier;
    case "tool":
      return Submission.ToolBarrier;
    case "approval":
      return Submission.ApprovalCommit;
    case "terminal":
      return Submission.TerminalCommit;
    default:
      return Submission.None;
  }
}

/** One completion in nine is a stale copy (another token, session or
 * revision than the submission's). */
function isStale(intent: Intent): boolean {
  return intent.variant % 9 === 1;
}

/** Picks a value by weight, deterministically from `noise`. */
function pickWeighted(noise: number, ...choices: [value: number, weight: number][]): number {
  const total = choices.reduce((sum, [, weight]) => sum + weight, 0);
  let point = noise % total;
  for (const [value, weight] of choices) {
    if (point < weight) return value;
    point -= weight;
  }
  return choices[0]![0];
}
