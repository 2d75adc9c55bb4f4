// The shared driver of the decision tests (test/core/*.test.ts).
//
// Every suite runs against every implementation of docs/core.md: the
// WebAssembly core and the reference model. A suite states one decision: it
// walks an execution to the point it needs with the helpers below (register
// agent → start → preparation active → provider barrier committed → …),
// applies the one message it checks, and asserts the exact result code, the
// exact effects and the snapshot fields the decision changed.
//
// Rules kept here:
// - every `Run` keeps the count of operations in flight a correct host
//   expects (docs/core.md *enter phase*, *settle operation*: a barrier being
//   written is one of them until its result arrives) and each walking step
//   checks the core agrees, so a walk never silently starts from another
//   count than its comment says;
// - effects are always read through `decodeEffectWords(machine.effectWords())`,
//   the one way both implementations expose them;
// - every walking step checks that its own message was accepted (`Ok`), so a
//   test fails at the step that went wrong, not later;
// - request handles are fresh numbers per driver (1000, 1001, …) so an effect
//   naming a request is never ambiguous;
// - a divergence from the contract is never hidden by weakening a test: it is
//   listed in `KNOWN_DISCREPANCIES` and the test is marked with its id, which
//   turns it into `it.fails` for the implementation that is wrong. When that
//   implementation is fixed, vitest reports the marked test as passing
//   unexpectedly, and the mark must be removed.

import { describe, expect, it } from "vitest";
import {
  AdmissionState,
  CommitOutcome,
  EffectKind,
  MessageKind,
  OutcomeType,
  PreparationOutcome,
  ResultCode,
  SessionEnding,
  SessionEventKind,
} from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { decodeEffectWords, type CoreEffect } from "../../host/core/effects.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import type { AgentRecordView, ControlMachine, CoreLimits, CoreSnapshot, ExecutionRecordView } from "../../host/core/machine.js";

// -- implementations ---------------------------------------------------------

export type ImplementationName = "wasm core" | "reference model";
export type MachineFactory = (limits: CoreLimits) => Promise<ControlMachine>;

/** Small tables: every capacity branch is reachable in a few messages. */
export const TEST_LIMITS: CoreLimits = { agentsMax: 4, executionsMax: 4 };

let compiledCore: Promise<WebAssembly.Module> | undefined;

/** Compiling core.wasm once per test file keeps each test's fresh instance
 * cheap; every instance still has its own memory and tables. */
function coreModule(): Promise<WebAssembly.Module> {
  compiledCore ??= loadCoreModule();
  return compiledCore;
}

export const IMPLEMENTATIONS: ReadonlyArray<readonly [ImplementationName, MachineFactory]> = [
  ["wasm core", async (limits) => ControlCore.create(limits, await coreModule())],
  // Imported lazily so a model that does not load fails its own suites only.
  ["reference model", async (limits) => new (await import("../model/reference-core.js")).ReferenceCore(limits)],
];

// -- known discrepancies -------------------------------------------------------

export interface Discrepancy {
  /** The implementation that disagrees with docs/core.md. */
  readonly wrong: ImplementationName;
  readonly message: string;
  readonly branch: string;
  /** What docs/core.md asks for. */
  readonly expected: string;
  /** What the implementation does. */
  readonly actual: string;
}

/** `PHRONOMY_SHOW_DISCREPANCIES=1 npx vitest run test/core` runs the marked
 * tests as plain tests, to see how each known discrepancy fails. */
const SHOW_DISCREPANCIES = process.env["PHRONOMY_SHOW_DISCREPANCIES"] === "1";

/** Every place an implementation disagrees with the contract. A test marked
 * with an id runs as `it.fails` for the `wrong` implementation only. */
export const KNOWN_DISCREPANCIES: Readonly<Record<string, Discrepancy>> = {
  // None open. Found and since reconciled (commit 045695a): the model's
  // DropStale on administrative refusals, its plain session-0 comparison and
  // its Ok from malformed TerminalCommitReady / ResumeCommitReady results;
  // the core's Ok from a refused AttachWaiter.
};

/** One implementation under test, as a suite body sees it. */
export interface Implementation {
  readonly name: ImplementationName;
  /** A fresh machine with its own tables. */
  boot(limits?: CoreLimits): Promise<Driver>;
  /** `it`, except that a test marked with discrepancy ids runs as
   * `it.fails` on the implementation those ids name as wrong. */
  it(title: string, body: () => Promise<void> | void, ...discrepancies: string[]): void;
}

/** `describe.each` over every implementation of the contract. */
export function describeDecisions(title: string, body: (implementation: Implementation) => void): void {
  describe.each(IMPLEMENTATIONS)(`${title} [%s]`, (name, factory) => {
    body({
      name,
      boot: (limits = TEST_LIMITS) => Driver.boot(factory, limits),
      it(testTitle, testBody, ...ids) {
        const wrongHere = ids.filter((id) => {
          const discrepancy = KNOWN_DISCREPANCIES[id];
          if (discrepancy === undefined) throw new Error(`unknown discrepancy id ${id}`);
          return discrepancy.wrong === name;
        });
        if (wrongHere.length === 0 || SHOW_DISCREPANCIES) it(testTitle, testBody);
        else it.fails(`${testTitle} [known wrong in ${name}: ${wrongHere.join(", ")}]`, testBody);
      },
    });
  });
}

// -- expected effects ----------------------------------------------------------

/** Constructors of the decoded effects, named after `EffectKind`, so an
 * expectation reads like the contract: `effect.FailRequest(r, code)`. */
export const effect = {
  AgentRegistered: (agent: number, generation: number): CoreEffect => ({ kind: EffectKind.AgentRegistered, agent, generation }),
  FailRequest: (request: number, code: number): CoreEffect => ({ kind: EffectKind.FailRequest, request, code }),
  FollowResume: (execution: number, request: number): CoreEffect => ({ kind: EffectKind.FollowResume, execution, request }),
  RecoverBeforeResume: (execution: number, request: number): CoreEffect => ({ kind: EffectKind.RecoverBeforeResume, execution, request }),
  AwaitSuspensionCommit: (execution: number, request: number): CoreEffect => ({ kind: EffectKind.AwaitSuspensionCommit, execution, request }),
  FollowQueued: (agent: number, queued: number): CoreEffect => ({ kind: EffectKind.FollowQueued, agent, queued }),
  SubmitPrepare: (agent: number, ownerToken: number, request: number): CoreEffect => ({ kind: EffectKind.SubmitPrepare, agent, ownerToken, request }),
  ExecutionInstalled: (execution: number, generation: number, request: number): CoreEffect => ({
    kind: EffectKind.ExecutionInstalled,
    execution,
    generation,
    request,
  }),
  StartSession: (execution: number, session: number): CoreEffect => ({ kind: EffectKind.StartSession, execution, session }),
  SubmitProviderBarrier: (execution: number, session: number, expectedRevision: number): CoreEffect => ({
    kind: EffectKind.SubmitProviderBarrier,
    execution,
    session,
    expectedRevision,
  }),
  SubmitToolBarrier: (execution: number, session: number, expectedRevision: number): CoreEffect => ({
    kind: EffectKind.SubmitToolBarrier,
    execution,
    session,
    expectedRevision,
  }),
  StartProviderCall: (execution: number, session: number): CoreEffect => ({ kind: EffectKind.StartProviderCall, execution, session }),
  StartToolBatch: (execution: number, session: number, toolCount: number): CoreEffect => ({ kind: EffectKind.StartToolBatch, execution, session, toolCount }),
  SetupFailed: (execution: number, session: number, failure: number): CoreEffect => ({ kind: EffectKind.SetupFailed, execution, session, failure }),
  RecoveryRequired: (slot: number, scope: number, code: number): CoreEffect => ({ kind: EffectKind.RecoveryRequired, slot, scope, code }),
  DropStale: (messageKind: number, code: number): CoreEffect => ({ kind: EffectKind.DropStale, messageKind, code }),
  DeferTerminal: (execution: number, session: number): CoreEffect => ({ kind: EffectKind.DeferTerminal, execution, session }),
  PostDeferredTerminal: (execution: number, session: number): CoreEffect => ({ kind: EffectKind.PostDeferredTerminal, execution, session }),
  SubmitTerminalCommit: (execution: number, session: number, expectedRevision: number): CoreEffect => ({
    kind: EffectKind.SubmitTerminalCommit,
    execution,
    session,
    expectedRevision,
  }),
  RegisterWaiter: (execution: number, request: number): CoreEffect => ({ kind: EffectKind.RegisterWaiter, execution, request }),
  DeliverOutcome: (execution: number, outcome: number): CoreEffect => ({ kind: EffectKind.DeliverOutcome, execution, outcome }),
  FailWaiters: (execution: number, code: number): CoreEffect => ({ kind: EffectKind.FailWaiters, execution, code }),
  ReleaseExecution: (execution: number, generation: number): CoreEffect => ({ kind: EffectKind.ReleaseExecution, execution, generation }),
  SubmitApprovalCommit: (execution: number, expectedRevision: number, request: number): CoreEffect => ({
    kind: EffectKind.SubmitApprovalCommit,
    execution,
    expectedRevision,
    request,
  }),
  ResumeSession: (execution: number, session: number, approved: boolean): CoreEffect => ({ kind: EffectKind.ResumeSession, execution, session, approved }),
  ContinueSession: (execution: number, session: number, continuation: number): CoreEffect => ({
    kind: EffectKind.ContinueSession,
    execution,
    session,
    continuation,
  }),
  DeliverStartFailure: (request: number, outcome: number): CoreEffect => ({ kind: EffectKind.DeliverStartFailure, request, outcome }),
} as const;

// -- handles -------------------------------------------------------------------

/** A registered agent. */
export interface AgentHandle {
  readonly agent: number;
  readonly agentGeneration: number;
}

/** An agent whose `Start` was admitted: its owner token and start request. */
export interface Admission extends AgentHandle {
  readonly token: number;
  readonly request: number;
}

/** The revision a started execution is prepared at; every commit the driver
 * makes moves it up by one, so expectations can say `revision + 1`. */
export const PREPARED_REVISION = 10;

/** `snapshot` with execution `slot`'s record changed by `changes`: the
 * expectation of a decision that touched that one record and nothing else. */
export function changedExecution(snapshot: CoreSnapshot, slot: number, changes: Partial<ExecutionRecordView>): CoreSnapshot {
  return {
    ...snapshot,
    executions: snapshot.executions.map((record) => (record.slot === slot ? { ...record, ...changes } : record)),
  };
}

// -- the driver ----------------------------------------------------------------

export class Driver {
  private nextRequest = 1000;

  private constructor(readonly machine: ControlMachine) {}

  static async boot(factory: MachineFactory, limits: CoreLimits = TEST_LIMITS): Promise<Driver> {
    return new Driver(await factory(limits));
  }

  /** A request handle no other message of this driver has used. */
  request(): number {
    const request = this.nextRequest;
    this.nextRequest += 1;
    return request;
  }

  apply(kind: MessageKind | number, ...args: number[]): number {
    return this.machine.apply(kind, ...args);
  }

  /** The effects of the last apply. */
  effects(): CoreEffect[] {
    return decodeEffectWords(this.machine.effectWords());
  }

  snapshot(): CoreSnapshot {
    return this.machine.snapshot();
  }

  agentRecord(slot: number): AgentRecordView {
    const record = this.snapshot().agents[slot];
    if (record === undefined) throw new Error(`agent slot ${slot} was never used`);
    return record;
  }

  executionRecord(slot: number): ExecutionRecordView {
    const record = this.snapshot().executions[slot];
    if (record === undefined) throw new Error(`execution slot ${slot} was never used`);
    return record;
  }

  /** Applies a walking step and insists it was accepted. */
  step(kind: MessageKind, ...args: number[]): CoreEffect[] {
    const code = this.apply(kind, ...args);
    const effects = this.effects();
    if (code !== ResultCode.Ok) {
      throw new Error(`walking step: message kind ${kind}(${args.join(", ")}) returned code ${code}; effects ${JSON.stringify(effects)}`);
    }
    return effects;
  }

  /** Applies `kind` and checks that it was dropped: `DropStale(kind, code)`,
   * the code returned, and no table changed. */
  expectDropped(kind: MessageKind, code: ResultCode, ...args: number[]): void {
    const before = this.snapshot();
    expect(this.apply(kind, ...args)).toBe(code);
    expect(this.effects()).toEqual([effect.DropStale(kind, code)]);
    expect(this.snapshot()).toEqual(before);
  }

  /** Applies a request message and checks that it was refused:
   * `FailRequest(request, code)`, the code returned, and no table changed. */
  expectRefused(code: ResultCode, request: number, kind: MessageKind, ...args: number[]): void {
    const before = this.snapshot();
    expect(this.apply(kind, ...args)).toBe(code);
    expect(this.effects()).toEqual([effect.FailRequest(request, code)]);
    expect(this.snapshot()).toEqual(before);
  }

  // -- walking: agents and admission -----------------------------------------

  registerAgent(closed = 0): AgentHandle {
    const [registered] = this.step(MessageKind.RegisterAgent, closed);
    if (registered?.kind !== EffectKind.AgentRegistered) throw new Error("RegisterAgent emitted no AgentRegistered");
    return { agent: registered.agent, agentGeneration: registered.generation };
  }

  /** A registered agent whose `Start` is admitted (admission `Admitting`). */
  admitted(handle: AgentHandle = this.registerAgent()): Admission {
    const request = this.request();
    const [submitted] = this.step(MessageKind.Start, handle.agent, handle.agentGeneration, request, 0);
    if (submitted?.kind !== EffectKind.SubmitPrepare) throw new Error("Start emitted no SubmitPrepare");
    return { ...handle, token: submitted.ownerToken, request };
  }

  /** A started execution whose preparation is `Active`: phase `CallingLlm`,
   * first session, provider barrier submitted and counted in flight (1),
   * one waiter (the start). */
  installed(options: { flags?: number; revision?: number; handle?: AgentHandle } = {}): Run {
    const admission = this.admitted(options.handle);
    const revision = options.revision ?? PREPARED_REVISION;
    const effects = this.step(
      MessageKind.InitialPreparationReady,
      admission.agent,
      admission.agentGeneration,
      admission.token,
      PreparationOutcome.Active,
      revision,
      options.flags ?? 0,
      admission.request,
    );
    const [installed, , started] = effects;
    if (installed?.kind !== EffectKind.ExecutionInstalled || started?.kind !== EffectKind.StartSession) {
      throw new Error(`InitialPreparationReady did not install: ${JSON.stringify(effects)}`);
    }
    return new Run(this, {
      agent: admission.agent,
      agentGeneration: admission.agentGeneration,
      request: admission.request,
      exec: installed.execution,
      generation: installed.generation,
      session: started.session,
      revision,
      inFlight: 1,
    }).checkInFlight();
  }

  /** Installed, provider barrier committed (it settled): the model call is
   * the one operation in flight. */
  callingModel(options: { flags?: number } = {}): Run {
    return this.installed(options).commitProviderBarrier();
  }

  /** The model call settled: phase `CallingLlm`, nothing in flight. */
  modelAnswered(options: { flags?: number } = {}): Run {
    return this.callingModel(options).settle();
  }

  /** The model asked for tools: phase `DispatchingTools`, tool barrier
   * submitted; the barrier being written is the one operation in flight. */
  dispatchingTools(): Run {
    return this.modelAnswered().event(SessionEventKind.LlmCompletedWithTools);
  }

  /** The tool barrier committed (it settled): `toolCount` tools in flight. */
  runningTools(toolCount = 2): Run {
    return this.dispatchingTools().commitToolBarrier(toolCount);
  }

  /** Every tool of the batch settled, the batch not yet reported
   * complete: phase `DispatchingTools`, nothing in flight. */
  toolsSettled(toolCount = 2): Run {
    const run = this.runningTools(toolCount);
    for (let index = 0; index < toolCount; index += 1) run.settle();
    return run;
  }

  /** Every tool settled and the batch completed: phase
   * `RecordingToolResults`, nothing in flight. */
  recordingToolResults(toolCount = 2): Run {
    return this.toolsSettled(toolCount).event(SessionEventKind.ToolsCompleted);
  }

  /** The session finished quiescent: phase `Terminal`, admission
   * `Terminalizing`, terminal commit submitted. */
  terminalizing(ending: SessionEnding = SessionEnding.Completed, options: { flags?: number } = {}): Run {
    return this.modelAnswered(options).finish(ending);
  }

  /** The session asked for approval and the suspension committed: status
   * and phase `Suspended`, session 0, admission `Suspended`, the start
   * request still waiting. */
  suspended(): Run {
    return this.modelAnswered().event(SessionEventKind.ApprovalRequired).finish(SessionEnding.Suspended).commitTerminal(OutcomeType.Suspended);
  }

  /** A suspended execution whose `Resume` was accepted: admission
   * `Resuming`, approval commit submitted. */
  resuming(): Run {
    return this.suspended().resume();
  }

  /** A durable execution installed by recovery: session 0, no waiters. */
  recovered(options: { status: number; phase: number; flags?: number; revision?: number; handle?: AgentHandle }): Run {
    const handle = options.handle ?? this.registerAgent();
    const request = this.request();
    const revision = options.revision ?? PREPARED_REVISION;
    const [installed] = this.step(
      MessageKind.RecoveryInstall,
      handle.agent,
      handle.agentGeneration,
      revision,
      options.status,
      options.phase,
      options.flags ?? 0,
      request,
    );
    if (installed?.kind !== EffectKind.ExecutionInstalled) throw new Error("RecoveryInstall did not install");
    return new Run(this, {
      ...handle,
      request,
      exec: installed.execution,
      generation: installed.generation,
      session: 0,
      revision,
      inFlight: 0,
    });
  }
}

/** The identity of a live execution as the host knows it. */
export interface RunState {
  readonly agent: number;
  readonly agentGeneration: number;
  /** The request that started (or recovered) it. */
  readonly request: number;
  readonly exec: number;
  readonly generation: number;
  session: number;
  revision: number;
  /** Operations in flight: barriers being written, model calls, tools. */
  inFlight: number;
}

/** The phases whose entry writes a barrier (docs/core.md *enter phase*),
 * by the session event that enters them. */
const BARRIER_EVENTS: ReadonlySet<number> = new Set([
  SessionEventKind.LlmCompletedWithTools,
  SessionEventKind.StateCompleted,
  SessionEventKind.ApprovalGranted,
]);

/** A live execution and the walking steps that move it on. Each step
 * applies one message the way a correct host would, insists it was
 * accepted, keeps `session`, `revision` and `inFlight` current, and checks
 * the core counts the same operations in flight. */
export class Run implements RunState {
  readonly agent: number;
  readonly agentGeneration: number;
  readonly request: number;
  readonly exec: number;
  readonly generation: number;
  session: number;
  revision: number;
  inFlight: number;

  constructor(
    private readonly driver: Driver,
    state: RunState,
  ) {
    this.agent = state.agent;
    this.agentGeneration = state.agentGeneration;
    this.request = state.request;
    this.exec = state.exec;
    this.generation = state.generation;
    this.session = state.session;
    this.revision = state.revision;
    this.inFlight = state.inFlight;
  }

  /** Insists the core counts the operations in flight this run expects
   * (while the execution still holds its slot). */
  checkInFlight(): Run {
    const record = this.record;
    if (record.agentSlotPlusOne !== 0 && record.generation === this.generation && record.inFlight !== this.inFlight) {
      throw new Error(`walking step: execution ${this.exec} has ${record.inFlight} operations in flight, the walk expects ${this.inFlight}`);
    }
    return this;
  }

  get record(): ExecutionRecordView {
    return this.driver.executionRecord(this.exec);
  }

  get agentRecord(): AgentRecordView {
    return this.driver.agentRecord(this.agent);
  }

  get admission(): number {
    return this.agentRecord.admissionState;
  }

  commitProviderBarrier(): Run {
    this.driver.step(MessageKind.ProviderDispatchReady, this.exec, this.generation, this.session, this.revision, CommitOutcome.Committed, this.revision + 1);
    this.revision += 1;
    // The barrier settled; the model call is in flight.
    return this.checkInFlight();
  }

  commitToolBarrier(toolCount: number): Run {
    this.driver.step(
      MessageKind.ToolDispatchReady,
      this.exec,
      this.generation,
      this.session,
      this.revision,
      CommitOutcome.Committed,
      this.revision + 1,
      toolCount,
    );
    this.revision += 1;
    // The barrier settled; the batch is in flight.
    this.inFlight += toolCount - 1;
    return this.checkInFlight();
  }

  /** One operation in flight settled. */
  settle(): Run {
    this.driver.step(MessageKind.OperationSettled, this.exec, this.generation);
    this.inFlight -= 1;
    return this.checkInFlight();
  }

  /** A session event; one that enters a barrier phase counts the barrier
   * in flight. */
  event(event: SessionEventKind): Run {
    this.driver.step(MessageKind.SessionEvent, this.exec, this.generation, this.session, event);
    if (BARRIER_EVENTS.has(event)) this.inFlight += 1;
    return this.checkInFlight();
  }

  finish(ending: SessionEnding): Run {
    this.driver.step(MessageKind.SessionFinished, this.exec, this.generation, this.session, ending);
    return this.checkInFlight();
  }

  /** The terminal commit succeeded with `outcome`. */
  commitTerminal(outcome: OutcomeType): Run {
    this.driver.step(MessageKind.TerminalCommitReady, this.exec, this.generation, this.session, this.revision, outcome, this.revision + 1);
    this.revision += 1;
    if (outcome === OutcomeType.Suspended) this.session = 0;
    return this;
  }

  /** `Resume` with a matching approval; returns the resume request. */
  resume(request = this.driver.request()): Run {
    this.resumeRequest = request;
    this.driver.step(MessageKind.Resume, this.exec, this.generation, this.agent, this.agentGeneration, request, 1);
    return this;
  }

  /** The request of the last `resume()`. */
  resumeRequest = 0;

  /** The approval commit succeeded: a new session in phase `Resuming`. */
  commitResume(approved: 0 | 1): Run {
    const effects = this.driver.step(
      MessageKind.ResumeCommitReady,
      this.exec,
      this.generation,
      this.revision,
      CommitOutcome.Committed,
      this.revision + 1,
      approved,
      this.resumeRequest,
    );
    const resumed = effects.find((candidate) => candidate.kind === EffectKind.ResumeSession);
    if (resumed?.kind !== EffectKind.ResumeSession) throw new Error("ResumeCommitReady emitted no ResumeSession");
    this.revision += 1;
    this.session = resumed.session;
    return this;
  }

  /** Adds a waiter; returns its request. */
  attachWaiter(request = this.driver.request()): number {
    this.driver.step(MessageKind.AttachWaiter, this.exec, this.generation, request);
    return request;
  }

  /** The execution is gone: its slot freed (next generation, no waiter)
   * and its agent's admission released. */
  expectReleased(): void {
    expect(this.record).toMatchObject({ agentSlotPlusOne: 0, generation: this.generation + 1, waiters: 0 });
    expect(this.agentRecord).toMatchObject({ admissionState: AdmissionState.None, executionSlotPlusOne: 0 });
    expect(this.driver.snapshot().liveExecutions).toBe(0);
  }
}
