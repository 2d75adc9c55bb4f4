// The ABI shared by the WebAssembly core (`assembly/`) and the TypeScript
// host (`host/`). This one file compiles as both AssemblyScript and
// TypeScript, so the two sides can never disagree on a number.
//
// Rules kept here:
// - every value is an explicit integer and is never reused for another
//   meaning; a retired value stays reserved;
// - zero is never a valid state, kind or outcome, so zeroed memory and a
//   missing argument both read as "invalid" rather than as a real value;
// - nothing but `const enum`s: no functions, no imports, no classes.

/** Control messages applied by the core, one at a time (SPEC §3). The
 * arguments each kind takes are listed in `docs/core.md`. */
export const enum MessageKind {
  RegisterAgent = 1,
  CloseAgent = 2,
  PurgeAgent = 3,
  Start = 4,
  InitialPreparationReady = 5,
  ProviderDispatchReady = 6,
  ToolDispatchReady = 7,
  SessionEvent = 8,
  OperationSettled = 9,
  SessionFinished = 10,
  DeferredTerminal = 11,
  TerminalCommitReady = 12,
  Resume = 13,
  ResumeCommitReady = 14,
  RecoveryInstall = 15,
  // 16 retired (was RecoverPreparation) and 17 retired (was
  // InitialPreparationRecoveryReady): preparation is one transaction, so no
  // `preparing` row is ever durable (docs/decisions/0022).
  ContinueRecovered = 18,
  CancelRequested = 19,
  AttachWaiter = 20,
  SubmissionRefused = 21,
  SetDraining = 22,
  DischargeRecovery = 23,
  DischargeAgentRecovery = 24,
  // 25–27 never assigned: set aside for issue 12 work that needed no core
  // message (conversations, busy policy); never to be given out.
  /** Cancel by id of a suspended execution (docs/decisions/0026). */
  CancelSuspended = 28,
  CancelCommitReady = 29,
}

/** One past the largest message kind; kinds are `1 <= kind < MessageKindEnd`. */
export const enum MessageKindLimit {
  End = 30,
}

/** What an apply returns: `Ok`, or the fact that made the core refuse or
 * drop the message. Named as facts (TigerBeetle style). */
export const enum ResultCode {
  Ok = 0,
  MessageKindUnknown = 1,
  ArgumentOutOfRange = 2,
  AgentSlotUnknown = 3,
  AgentGenerationMustMatch = 4,
  AgentClosed = 5,
  AgentAlreadyAdmitted = 6,
  AgentAdmissionHeld = 7,
  AgentsFull = 8,
  RuntimeDraining = 9,
  StartCancelled = 10,
  ExecutionSlotUnknown = 11,
  ExecutionGenerationMustMatch = 12,
  ExecutionsFull = 13,
  OwnerTokenMustMatch = 14,
  RevisionMustMatch = 15,
  RevisionMustIncrease = 16,
  SessionMustMatch = 17,
  PhaseMustMatch = 18,
  StatusMustMatch = 19,
  AgentMustMatch = 20,
  TransitionUndefined = 21,
  InFlightUnderflow = 22,
  InFlightFull = 23,
  WaitersFull = 24,
  NotQuiescent = 25,
  ApprovalMustMatch = 26,
  ResumeInProgress = 27,
  ContinuationInvalid = 28,
  // 29 retired (was FailureRequired, of the failed_terminal continuation;
  // docs/decisions/0022).
  OutcomeUnknown = 30,
  StoreFailed = 31,
  RehydrationRequired = 32,
  PreparationNotEstablished = 33,
  PreparationTerminal = 34,
  OffloadFull = 35,
  AdmissionStateMustMatch = 36,
  TerminalNotDeferred = 37,
}

/** What the host must carry out after an apply, in order. Each effect is
 * five words in the effect buffer: `[kind, a, b, c, d]`; `docs/core.md`
 * names the arguments of each. */
export const enum EffectKind {
  /** (agent, generation): the agent now lives in this slot. */
  AgentRegistered = 1,
  /** (request, code): settle the request with the typed error of `code`. */
  FailRequest = 2,
  /** (agent, ownerToken, request): offload *prepare execution*. */
  SubmitPrepare = 3,
  /** (exec, generation, request): the execution now lives in this slot. */
  ExecutionInstalled = 4,
  /** (exec, session): build the invocation and its FSM session. */
  StartSession = 5,
  /** (exec, session, expectedRevision): offload the provider barrier. */
  SubmitProviderBarrier = 6,
  /** (exec, session, expectedRevision): offload the tool batch barrier. */
  SubmitToolBarrier = 7,
  /** (exec, session): begin the model call. */
  StartProviderCall = 8,
  /** (exec, session, toolCount): begin the tool batch. */
  StartToolBatch = 9,
  /** (exec, session, SetupFailure): the barrier could not be written; the
   * session fails (`llm_setup_failed` / `tool_setup_failed`). */
  SetupFailed = 10,
  /** (slot, RecoveryScope, code): the admission is `recovery_required`;
   * warn with the ids involved. */
  RecoveryRequired = 11,
  /** (messageKind, code): a stale, duplicate or malformed result was
   * dropped; log it. Nothing changed. */
  DropStale = 12,
  /** (exec, session): keep the terminal until the execution is quiescent. */
  DeferTerminal = 13,
  /** (exec, session): the execution is quiescent; post `DeferredTerminal`. */
  PostDeferredTerminal = 14,
  /** (exec, session, expectedRevision): offload the terminal commit. */
  SubmitTerminalCommit = 15,
  /** (exec, request): add the request's result task to the waiters. */
  RegisterWaiter = 16,
  /** (exec, OutcomeType): deliver the committed outcome to the listeners
   * and every waiter (SPEC §6.3). */
  DeliverOutcome = 17,
  /** (exec, code): reject every waiter with the typed error of `code`. */
  FailWaiters = 18,
  /** (exec, generation it had): the slot belongs to no one now; free the
   * host's side tables for it. */
  ReleaseExecution = 19,
  /** (exec, expectedRevision, request): offload the approval commit. */
  SubmitApprovalCommit = 20,
  /** (exec, session, approved 1/0): resume the session after approval. */
  ResumeSession = 21,
  // 22 retired (was SubmitPreparationRecovery; docs/decisions/0022).
  /** (exec, session, Continuation): rebuild the session at the point the
   * continuation names. */
  ContinueSession = 23,
  /** (request, PreparationOutcome): preparation ended the start; settle the
   * request with the error the preparation returned. */
  DeliverStartFailure = 24,
  /** (exec, expectedRevision, request): offload the terminal commit of a
   * suspended execution cancelled by id (outcome failed, CANCELLED). */
  SubmitCancelCommit = 28,
}

export const enum EffectKindLimit {
  End = 29,
}

/** Admission states (SPEC §1). `None` is a free admission. */
export const enum AdmissionState {
  None = 0,
  Admitting = 1,
  Executing = 2,
  Resuming = 3,
  Suspended = 4,
  Cancelling = 5,
  Terminalizing = 6,
  RecoveryRequired = 7,
}

export const enum AdmissionStateLimit {
  End = 8,
}

/** Durable execution status as the core tracks it. */
export const enum ExecutionStatus {
  None = 0,
  Preparing = 1,
  Active = 2,
  Suspended = 3,
  Terminal = 4,
}

export const enum ExecutionStatusLimit {
  End = 5,
}

/** Execution phases (SPEC §1); rows of the FSM table. The stores write
 * only `calling_llm`, `dispatching_tools`, `suspended`, `resuming` and
 * `terminal`; the others name live positions (`recording_tool_results`) or
 * durable states this design never writes (`preparing` and the recovery
 * phases): a row read in one is installed only to be held for inspection
 * (docs/decisions/0022). */
export const enum Phase {
  None = 0,
  Preparing = 1,
  CallingLlm = 2,
  DispatchingTools = 3,
  RecordingToolResults = 4,
  Suspended = 5,
  Resuming = 6,
  Terminal = 7,
  RecoveryProviderCompleted = 8,
  RecoveryTools = 9,
  RecoveryToolsCompleted = 10,
  RecoveryResolvedFailed = 11,
}

export const enum PhaseLimit {
  End = 12,
}

/** FSM session events posted by the session runner; columns of the FSM
 * table. */
export const enum SessionEventKind {
  None = 0,
  /** The model answered with tool calls to run. */
  LlmCompletedWithTools = 1,
  /** Every tool of the batch settled. */
  ToolsCompleted = 2,
  /** The tool results are recorded in the runtime snapshot. */
  StateCompleted = 3,
  /** The model asked for a tool that needs approval. */
  ApprovalRequired = 4,
  /** The resumed approval was granted. */
  ApprovalGranted = 5,
  /** The resumed approval was declined. */
  ApprovalRejected = 6,
  /** The session ended (output, failure, suspension, handoff, cancel). */
  Finish = 7,
}

export const enum SessionEventLimit {
  End = 8,
}

/** How a session ended, carried by `SessionFinished`. */
export const enum SessionEnding {
  None = 0,
  Completed = 1,
  Failed = 2,
  Suspended = 3,
  HandedOff = 4,
  Cancelled = 5,
  TimedOut = 6,
  CoordinationWait = 7,
}

export const enum SessionEndingLimit {
  End = 8,
}

/** Outcome of the offloaded *prepare*. */
export const enum PreparationOutcome {
  None = 0,
  Active = 1,
  Terminal = 2,
  NotEstablished = 3,
  OutcomeUnknown = 4,
  RecoveryRequired = 5,
  StoreFailed = 6,
}

/** Outcome of a barrier or approval commit. */
export const enum CommitOutcome {
  None = 0,
  Committed = 1,
  RehydrationRequired = 2,
  StoreFailed = 3,
}

/** Terminal outcome types (SPEC §6.3), plus the commit's own failure. */
export const enum OutcomeType {
  None = 0,
  Completed = 1,
  Failed = 2,
  Suspended = 3,
  HandedOff = 4,
  CoordinationWait = 5,
  StoreFailed = 6,
}

/** Recovery continuations (SPEC §6.2) that `ContinueRecovered` carries.
 * `None` says the saved facts name no continuation: the core refuses it
 * like any continuation its table does not list for the durable phase. */
export const enum Continuation {
  None = 0,
  FrameworkTools = 1,
  // 2 retired (was FrameworkCalls), 3 retired (was Output), 4 retired (was
  // Followup), 5 retired (was FailedTerminal): each continued from a
  // recovery phase no store writes (docs/decisions/0022).
  ApprovalRejection = 6,
  RecallModel = 7,
}

export const enum ContinuationLimit {
  End = 8,
}

/** Which submission the offload refused (`SubmissionRefused`). */
export const enum Submission {
  None = 0,
  Prepare = 1,
  ProviderBarrier = 2,
  ToolBarrier = 3,
  ApprovalCommit = 4,
  // 5 retired (was PreparationRecovery; docs/decisions/0022).
  TerminalCommit = 6,
}

export const enum SubmissionLimit {
  End = 7,
}

/** Which barrier could not be set up (`SetupFailed`). */
export const enum SetupFailure {
  None = 0,
  Provider = 1,
  Tool = 2,
}

/** What the slot in a `RecoveryRequired` effect refers to. */
export const enum RecoveryScope {
  None = 0,
  Agent = 1,
  Execution = 2,
}

/** Execution flag bits (the `flags` byte of an execution record). */
export const enum ExecutionFlag {
  CancelRequested = 1,
  TerminalDeferred = 2,
  // 4 retired (was Reservation: the seeds' reservation / execution
  // extension, which this host never creates) and 8 retired (was
  // FrameworkCallsPending, read only by the retired continuations);
  // docs/decisions/0022.
  /** The durable approval request was granted. */
  ApprovalGranted = 16,
}

/** Flags the host may set at installation; the others are the core's. */
export const enum ExecutionFlagMask {
  HostSettable = 16,
}

/** Agent record layout: 16 bytes per agent slot.
 *
 * ```
 *  0       4       8       12  13  14      16
 *  +-------+-------+-------+---+---+-------+
 *  | owner | exec  | gener | a | c | (pad) |
 *  | token | slot+1| ation | s | l |       |
 *  +-------+-------+-------+---+---+-------+
 *  as = admission state, cl = closed (0/1), 2 = free slot
 * ```
 * A free agent slot keeps its generation; `exec slot+1` then holds the
 * next free agent slot + 1 (the free list). */
export const enum AgentRecord {
  OwnerToken = 0,
  ExecutionSlotPlusOne = 4,
  Generation = 8,
  AdmissionState = 12,
  Lifecycle = 13,
  Size = 16,
}

/** Agent lifecycle byte. */
export const enum AgentLifecycle {
  Free = 0,
  Open = 1,
  Closed = 2,
}

/** Execution record layout: 24 bytes per execution slot.
 *
 * ```
 *  0       4       8       12      16    18    20 21 22 23 24
 *  +-------+-------+-------+-------+-----+-----+--+--+--+--+
 *  | agent | revis | sess  | gener | wai | in  |st|ph|fl|  |
 *  | slot+1| ion   | ion   | ation | ters| fli |  |  |  |  |
 *  +-------+-------+-------+-------+-----+-----+--+--+--+--+
 * ```
 * `agent slot+1` is 0 for a free slot, whose `revision` word then holds the
 * next free execution slot + 1 (the free list). */
export const enum ExecutionRecord {
  AgentSlotPlusOne = 0,
  Revision = 4,
  Session = 8,
  Generation = 12,
  Waiters = 16,
  InFlight = 18,
  Status = 20,
  Phase = 21,
  Flags = 22,
  Size = 24,
}

/** The effect buffer: a count word, then `EffectsMax` effects of `Words`
 * u32 words each. The longest decision (`InitialPreparationReady`
 * installing an execution) writes `EffectsLongestDecision`; sixteen leaves
 * room without making the buffer a cost. The differential fuzz checks that
 * its streams reach the longest decision. */
export const enum EffectLayout {
  CountOffset = 0,
  FirstEffectOffset = 4,
  Words = 5,
  EffectsMax = 16,
  // Sizes and offsets, not kinds: two may be equal.
  // eslint-disable-next-line @typescript-eslint/no-duplicate-enum-values
  EffectsLongestDecision = 4,
}

/** Named limits, with why each has its value. */
export const enum Limit {
  /** A u16 waiter count; a caller attaching more than this many observers
   * to one execution is a bug, not a workload. */
  WaitersMax = 4096,
  /** Operations one execution may have in flight: one model call or one
   * tool batch. A batch larger than this is refused at its barrier. */
  InFlightMax = 1024,
  /** Default agents an environment may intern (16 bytes each: 1 MiB). */
  AgentsMaxDefault = 65536,
  /** Default live executions (24 bytes each: 24 MiB at the limit). */
  ExecutionsMaxDefault = 1048576,
  /** Hard ceiling of the execution table, so a slot fits in 24 bits and a
   * table fits well inside 4 GiB of linear memory. */
  ExecutionsMaxCeiling = 16777216,
  /** Hard ceiling of the agent table. */
  AgentsMaxCeiling = 4194304,
}
