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
  // The conversation lifecycle (docs/decisions/0062): one record per agent
  // slot in the conversation table, moved only by these messages.
  /** (agent, generation, Ownership): the lease (or partition) of the
   * conversation is held here, or by another process. */
  ConversationOwned = 30,
  /** (agent, generation, RecoveryCause, RecoveryFact bits): a trigger asks
   * for the conversation's rows to be read and installed again. */
  RecoveryRequested = 31,
  /** (agent, generation, epoch, RecoveryOutcome, RecoveryFact bits of the
   * pass, `RecoveryFactMask.PassEnd`): the recovery of `epoch` ended; a
   * stale epoch is dropped. */
  RecoveryFinished = 32,
  /** (agent, generation): a host operation (a start, a resume, a recovery,
   * a close) uses the conversation. */
  UseBegin = 33,
  /** (agent, generation): that operation ended. */
  UseEnd = 34,
  /** (agent, generation, pinned 0/1): keep the conversation while defined,
   * or let it go when idle. */
  SetPinned = 35,
  /** (agent, generation, request, AdmissionSource, BusyPolicy,
   * AdmissionFact bits, starts waiting): the one admission decision;
   * answered by `AdmissionDecided`. `starts waiting`: the starts of this
   * conversation waiting for it to be ready now (answered
   * `WaitUntilReady`, not yet asked again), counted by the host. */
  Admit = 36,
  /** (agent, generation, count): messages read from the durable queue
   * (a restore) now wait here. */
  MessageQueued = 37,
  /** (agent, generation): a queued message left without running (its
   * cancel committed, its write failed). */
  MessageLeft = 38,
  /** (agent, generation, HeadOutcome, Ownership): how the start of the head
   * `Admit` let start ended (the store's answer, translated), and who the
   * store says holds the conversation (`None`: not read). The core decides
   * what becomes of the head (`HeadKept`, `HeadTaken`, or it left). */
  HeadSettled = 39,
  /** (agent, generation): the conversation's admission was released (its
   * execution ended); start the head, or let it go when idle. */
  AdmissionReleased = 40,
  /** (agent, generation, HoldCause): a ready conversation is held (a write
   * failed, its lease lapsed) until a recovery installs it again. */
  ConversationHeld = 41,
  /** (agent, generation): a message `Admit` counted queued is durable now
   * (its enqueue committed and its place in the durable order is known):
   * start the head if one is due. Until then the host cannot start it, so
   * the core is told when it can (docs/decisions/0062, "The head is
   * offered by the core only"). */
  MessageWritten = 42,
  /** (agent, generation): the wait a `RetryHeadAfter` asked for is over:
   * start the head if one is due. */
  HeadRetryDue = 43,
  /** (agent, generation, epoch, facts): the wait a `RetryAfter(epoch)` asked
   * for is over. Still held at that epoch: its recovery begins, with the
   * cause its hold names (the core's mapping), as a `RecoveryRequested`
   * would; else dropped as stale (a recovery began meanwhile). */
  RetryDue = 44,
  /** (agent, generation, RecoveryCause): this process holds the
   * conversation's lease again at a later epoch — taken back on demand (a
   * first use's acquire, which the store reports as no takeover; a start
   * that found the store holding a conversation recorded owned
   * elsewhere): `Retake`; a write fenced at the epoch it lost: `FencedWrite`
   * (any other cause: `ArgumentOutOfRange`). The core answers
   * `RecoveryDue(cause)` when an execution of the conversation is held for
   * recovery here or the conversation is recorded owned elsewhere, else
   * nothing (docs/decisions/0062, "By id", "Every retake asks the core"). */
  ConversationRetaken = 45,
}

/** One past the largest message kind; kinds are `1 <= kind < MessageKindEnd`. */
export const enum MessageKindLimit {
  End = 46,
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
  /** The conversation's table has no entry for the message in its phase. */
  ConversationPhaseMustMatch = 38,
  /** A recovery's finish names an epoch that is not the running one. */
  RecoveryEpochMustMatch = 39,
  ConversationUsersUnderflow = 40,
  ConversationUsersFull = 41,
  QueueEmpty = 42,
  QueueFull = 43,
  /** PurgeAgent of a conversation still used, or with messages queued. */
  ConversationInUse = 44,
  /** `HeadSettled` with no head starting. */
  HeadNotStarting = 45,
  /** `RecoveryRequested(RecoverCalled)` of a conversation whose lease is
   * not held here (`RecoveryFact.LeaseNotHeldHere`). */
  LeaseNotHeldHere = 46,
  /** A resume of another kind than the pending wait: a value for an
   * approval, or approve/decline for a typed input wait
   * (`ResumeFact.PendingWaitsForInput`, `GivesValue`; docs/decisions/0075). */
  WaitKindMustMatch = 47,
  /** The value, edited arguments or response a resume carries failed its
   * schema (`ResumeFact.ValueRefused`): nothing decided, the wait stays
   * pending (docs/decisions/0075). */
  ValueMustMatchSchema = 48,
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
  /** (request, AdmissionVerdict, agent, interrupt 1/0): what to do with the
   * start `Admit` asked about; interrupt says an execution runs that an
   * `EnqueueFront` cancels once the message is queued. */
  AdmissionDecided = 29,
  /** (agent, epoch, RowsPolicy, read queue 1/0): read the conversation's
   * rows as the policy says, install them, then `RecoveryFinished`. */
  ReadRows = 30,
  /** (agent, epoch): a recovery runs already; wait for its end. */
  RecoveryJoined = 31,
  /** (agent, epoch, milliseconds): ask for the held conversation's
   * recovery again after this long (the one backoff; a queue head the
   * store failed waits by the same backoff, as `RetryHeadAfter`). */
  RetryAfter = 32,
  /** (agent): starts may be admitted now (the recovery gate opens). */
  OpenAdmissions = 33,
  /** (agent, drain): every decision filed in the approval inbox for the
   * conversation may be claimed now (`ConversationFlag.InboxOpen`); drain 1:
   * claim now — some may wait (a takeover's, a suspended execution's). */
  OpenInbox = 34,
  /** (agent): read the durable queue, then start its head. */
  RestoreQueue = 35,
  /** (agent): start the queue's head (ask `Admit` with source queue head). */
  StartHead = 36,
  /** (agent, generation): the conversation is idle; purge it and give up
   * its lease. */
  ReleaseConversation = 37,
  /** (exec, request): the decision of `request` is the one being committed
   * on the execution: settle the request as that commit's request settles. */
  FollowResume = 38,
  /** (exec, request): the execution is held for recovery (its last
   * commit's outcome not known): recover it, then send the decision again
   * with `ResumeFact.AfterRecovery` (docs/decisions/0057, 0065). */
  RecoverBeforeResume = 39,
  /** (exec, request): the decision is for the suspension being committed:
   * send it again once that terminal commit is answered (suspended, ended,
   * or held; docs/decisions/0065). */
  AwaitSuspensionCommit = 40,
  /** (agent, queued): the conversation is owned elsewhere and `queued`
   * messages are counted queued here: their callers follow them to the
   * process that runs them (the one follower of executions run
   * elsewhere). The messages keep their place and their count here: they
   * are still queued in the store, and run here first if this process
   * takes the conversation back (docs/decisions/0062, "Owned elsewhere"). */
  FollowQueued = 41,
  /** (exec, generation): the conversation is owned elsewhere and this
   * execution, holding its admission here, is parked — suspended (a
   * decision or a cancel of it may be under way) or held for recovery:
   * nothing here will tell its callers when it moves on, so they follow it
   * to the process that runs it next (the one follower of executions run
   * elsewhere). An execution running here keeps its callers: its next
   * write is fenced and tells them (docs/decisions/0062, "Owned
   * elsewhere"). */
  FollowAdmitted = 42,
  /** (agent, milliseconds): the store failed the preparation of the
   * queue's head, which is the head again: send `HeadRetryDue` after this
   * long (the one backoff, counted by the conversation's failures). Not
   * `RetryAfter`: that one asks for a recovery of a held conversation. */
  RetryHeadAfter = 43,
  /** (agent): the head whose start just settled (`HeadSettled`) is still
   * queued in the store, and the conversation's head again here: the host
   * puts it back at the front of its queue. Whether it is offered again
   * after the backoff (`RetryHeadAfter`), followed to the owner
   * (`FollowQueued`, in the same apply), or waits for the conversation to
   * be ready (its recovery's `StartHead`) follows from the same apply. */
  HeadKept = 44,
  /** (agent): the head whose start just settled (`HeadSettled`) runs as the
   * execution another process prepared under its id: it left the queue,
   * nothing is written terminal, and its Run follows that execution (the
   * one follower of executions run elsewhere). */
  HeadTaken = 45,
  /** (agent): decisions filed for the conversation wait (only what a
   * conversation not live here takes is claimed): the lease changed hands
   * and its executions are read again, it is owned elsewhere, or let go. */
  CloseInbox = 46,
  /** (agent): the starts the core answered `WaitUntilReady` for this
   * conversation may be answered otherwise now — it left registering or
   * recovering (ready, held, owned elsewhere), or its agent closed: they
   * ask `Admit` again. */
  ReadinessChanged = 47,
  /** (agent, RecoveryCause): a recovery of the conversation is due for
   * this cause: ask for it (`RecoveryRequested`, the one way back in). */
  RecoveryDue = 48,
}

export const enum EffectKindLimit {
  End = 49,
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

/** Phases of a conversation (docs/decisions/0062), rows of the
 * conversation table (`assembly/conversation-fsm.ts`). `None` is a free
 * agent slot. */
export const enum ConversationPhase {
  None = 0,
  /** Registered; its ownership and recovery are still to come. */
  Registering = 1,
  /** Its rows are being read and installed (an epoch and a cause). */
  Recovering = 2,
  /** Recovered and owned here: starts are admitted. */
  Ready = 3,
  /** A recovery or a write failed; retried after a backoff (its cause). */
  Held = 4,
  /** Another process holds its lease: starts are filed for it. */
  OwnedElsewhere = 5,
  /** Idle: the host purges it and gives up its lease. */
  Releasing = 6,
}

export const enum ConversationPhaseLimit {
  End = 7,
}

/** Events of the conversation table: columns. */
export const enum ConversationEvent {
  None = 0,
  OwnedHere = 1,
  OwnedElsewhere = 2,
  RecoveryRequested = 3,
  Recovered = 4,
  RecoveryFailed = 5,
  Held = 6,
  Idle = 7,
  Used = 8,
}

export const enum ConversationEventLimit {
  End = 9,
}

/** Who holds the conversation (`ConversationOwned`). */
export const enum Ownership {
  None = 0,
  Here = 1,
  Elsewhere = 2,
}

/** What the host knows of a conversation when it reports its owner at its
 * registration (`ConversationOwned`'s fourth argument; 0 in every later
 * report). The core decides the pin from them: a conversation is kept
 * registered when idle if it was owned elsewhere then (the store keeps
 * asking for its lease, and takes it over), or if its agent is defined by
 * id (one conversation per definition: it keeps its entry, and on a
 * leasing store its lease, while defined). */
export const enum OwnerFact {
  /** Its agent is defined by id (`env.agent({ id })`), not by name. */
  DefinedById = 1,
}

export const enum OwnerFactMask {
  All = 1,
}

/** The nine triggers of a recovery (`RecoveryRequested`), the retry a
 * `RetryAfter` asked for, and the settling of this process's own lease. */
export const enum RecoveryCause {
  None = 0,
  OpenScan = 1,
  FirstUse = 2,
  /** `env.recover()`. */
  RecoverCalled = 3,
  LeaseTakeover = 4,
  PartitionTaken = 5,
  Retake = 6,
  FencedWrite = 7,
  HealAfterStoreFault = 8,
  SessionSettling = 9,
  Retry = 10,
  /** This process's own lease tick is renewing a late lease of the
   * conversation's partition, or taking it back (docs/decisions/0055): a
   * race it resolves itself, so starts wait (`WaitUntilReady`) instead of
   * being refused; the pass reads nothing (a takeover it ends in joins it
   * and brings its own read). */
  LeaseSettling = 11,
  /** A conversation this process moved here (`TakeHere`, docs/decisions/
   * 0101), reported as a retake: the move's statement found no row of it
   * anywhere, under the fence lock of its former partition, and its fence
   * is a partition held here since. Its facts are trusted as a first
   * use's (with `PartitionScanned`, the store's fact for a conversation
   * it moved, nothing is read), and nothing waits in its inbox. */
  Moved = 12,
}

export const enum RecoveryCauseLimit {
  End = 13,
}

/** Facts the host knows when it asks for a recovery; bits of
 * `RecoveryRequested`'s fourth argument. The core chooses the rows to read
 * from them (`RowsPolicy`). */
export const enum RecoveryFact {
  /** The open scan found unfinished rows of the conversation. */
  InScan = 1,
  /** The open scan found messages queued for it. */
  QueuedAtOpen = 2,
  /** Its partition's unfinished rows were read when it was taken. */
  PartitionScanned = 4,
  /** Its partition was held since before the scan was read. */
  HeldSinceBeforeScan = 8,
  /** Its lease is at epoch 1: nobody ever wrote under it before. */
  LeaseEpochOne = 16,
  /** The store leases conversations (PostgreSQL). */
  Leasing = 32,
  /** Recovery runs by itself in this environment (`Phronomy.open`'s
   * `recover`, not a visitor): with `Leasing`, a held conversation is
   * retried after the backoff; else it waits for `env.recover()`. */
  RecoversByItself = 64,
  /** `RecoveryFinished` only: a row the pass read is the execution of a
   * start still being prepared here (another process prepared the same
   * message meanwhile), or a row read while another start of the
   * conversation holds the admission here, being prepared (0137): the
   * pass left it for that start to settle. */
  StartPreparingHere = 128,
  /** With `Leasing`: the conversation's lease is not held here now (held
   * elsewhere, or by nobody). `env.recover()` is refused then
   * (`LeaseNotHeldHere`): the process holding it recovers it. */
  LeaseNotHeldHere = 256,
}

export const enum RecoveryFactMask {
  /** The facts a recovery is asked with (`RecoveryRequested`, `RetryDue`):
   * every fact but `StartPreparingHere`. */
  All = 383,
  /** The facts a pass reports as it ends (`RecoveryFinished`). */
  PassEnd = 128,
}

/** Which rows a recovery reads (`ReadRows`). */
export const enum RowsPolicy {
  None = 0,
  /** The open scan's rows are current: use them, read nothing. */
  FromScan = 1,
  /** Read the conversation's unfinished rows from the store. */
  FromStore = 2,
  /** Nothing can have been written: read nothing. */
  Nothing = 3,
}

/** How a recovery ended (`RecoveryFinished`). */
export const enum RecoveryOutcome {
  None = 0,
  Recovered = 1,
  StoreFault = 2,
  OutcomeUnknown = 3,
  NotQuiescent = 4,
  LeaseLapsed = 5,
}

export const enum RecoveryOutcomeLimit {
  End = 6,
}

/** Why a conversation is held (its `cause` byte while `Held`). */
export const enum HoldCause {
  None = 0,
  StoreFault = 1,
  OutcomeUnknown = 2,
  NotQuiescent = 3,
  LeaseLapsed = 4,
}

export const enum HoldCauseLimit {
  End = 5,
}

/** Where a start comes from (`Admit`). */
export const enum AdmissionSource {
  None = 0,
  /** `agent.start` in this process. */
  Direct = 1,
  /** The head of the conversation's durable queue. */
  QueueHead = 2,
  /** A start another process filed for this one (decision 0031). */
  Filed = 3,
  /** A decision (`agent.resume`) on an execution not live here: it goes
   * where the conversation is held. Asked of `admissionVerdictOf` only,
   * never in an `Admit` (the `Resume` message decides the rest). */
  Resume = 4,
  /** `env.retry`: a new attempt of an ended execution asks as a start of
   * this process does (filed for the owner when owned elsewhere), with
   * the busy policy "reject": it never passes messages queued, a running
   * execution, or a conversation held or recovering. */
  Retry = 5,
  /** `env.cancel` of an execution not live here. Asked of
   * `byIdVerdictOf` only, never in an `Admit`. */
  Cancel = 6,
  /** `env.wait` of an execution running but not live here: followed at
   * its owner (`FileForOwner`), or read here (`RunHere`). Asked of
   * `byIdVerdictOf` only. */
  Observe = 7,
}

/** The start's busy policy (decision 0025). */
export const enum BusyPolicy {
  None = 0,
  Reject = 1,
  Enqueue = 2,
  Interrupt = 3,
}

/** What `Admit` answers (`AdmissionDecided`). */
export const enum AdmissionVerdict {
  None = 0,
  /** Apply `Start` now. */
  RunHere = 1,
  /** Write the message at the back of the durable queue. */
  EnqueueBack = 2,
  /** Write it at the front, then interrupt the running execution. */
  EnqueueFront = 3,
  /** Another process owns the conversation: file the start for it. */
  FileForOwner = 4,
  /** Registering or recovering: ask again once it is ready. */
  WaitUntilReady = 5,
  RefuseBusy = 6,
  /** Held for recovery: refused for now (AGENT_BUSY, recovering). */
  RefuseHeld = 7,
  RefuseClosed = 8,
  /** Busy, and the store keeps no queue for "enqueue" / "interrupt". */
  RefuseNoQueue = 9,
  /** A queue head that cannot start now stays the head. */
  StayQueued = 10,
  /** A filed start for a conversation owned elsewhere stays filed. */
  LeaveFiled = 11,
  /** A start (or retry) made here for a conversation owned elsewhere that
   * cannot be filed for its owner (no start inbox, a process that takes
   * no share, the partition lapsed here): refused, AGENT_BUSY with the
   * owner the store names (docs/decisions/0062, "Filing or refusing").
   * By id (`byIdVerdict`): another process owns the conversation (or
   * nobody holds its lease) and there is nothing to file it in, or nobody
   * to claim it. */
  RefuseOwnedElsewhere = 12,
  /** By id (`byIdVerdict`): its agent is not defined here, and a
   * decision or a new attempt runs the agent's model and tools here. */
  RefuseNotDefined = 13,
  /** By id: the conversation is this process's (live or defined here) but
   * the execution is not live: its recovery has not installed it. */
  RefuseNotInstalled = 14,
  /** A start made here for a conversation owned elsewhere, with
   * `AdmissionSituation.CanTakeHere` and nothing of it here (no admission,
   * nothing queued, no head starting): ask the store to move the
   * conversation here (docs/decisions/0101). The store's statement records
   * it only if the conversation has nothing anywhere (no execution, no
   * message queued, no start filed, no home elsewhere); then the
   * conversation is owned here and `Admit` is asked again (`RunHere`);
   * refused, it is asked again without the fact (`FileForOwner`). */
  TakeHere = 15,
}

export const enum AdmissionVerdictLimit {
  End = 16,
}

/** What the host knows when an operation by execution id (`env.cancel`,
 * `env.admin.decide`, `env.retry`, `env.wait`) finds no conversation live
 * here to ask: bits of `byIdVerdict`'s second argument. The host reads
 * them (the store's lease, its inbox); the core decides. */
export const enum ByIdFact {
  /** A visitor of a SQLite store (docs/decisions/0015): the owner runs every conversation. */
  Visitor = 1,
  /** The store leases conversations (PostgreSQL). */
  Leasing = 2,
  /** With `Leasing`: this process holds the conversation's lease. */
  LeaseHeldHere = 4,
  /** With `Leasing`: another process holds it (neither bit: nobody does). */
  LeaseHeldElsewhere = 8,
  /** The store keeps the approval inbox: work can be filed for its owner. */
  InboxKept = 16,
  /** The conversation is live here, or its agent (definition) is defined here. */
  ConversationHere = 32,
  End = 64,
}

/** The facts of an admission besides phase, source and policy: bits of
 * the exported `admissionVerdict` (the document walks every value). */
export const enum AdmissionSituation {
  Closed = 1,
  /** An execution holds the agent's admission. */
  AdmissionHeld = 2,
  Queued = 4,
  HeadStarting = 8,
  /** The store keeps a durable queue. */
  QueueKept = 16,
  /** The admission is held for recovery (`RecoveryRequired`): a start
   * is refused held, unless messages are queued (it goes behind them). */
  RecoveryHeld = 32,
  /** A start made here can be filed for the conversation's owner
   * (`AdmissionFact.CanFile`). */
  CanFile = 64,
  /** A start made here may move an idle conversation here
   * (`AdmissionFact.CanTakeHere`, docs/decisions/0101). */
  CanTakeHere = 128,
  End = 256,
}

/** What the host tells `Admit` of the store and this process (argument
 * `f`, bits): facts only it can read. `QueueKept` is the former "queue
 * kept 0/1" flag, so its value stays 1. */
export const enum AdmissionFact {
  /** The store keeps a durable queue. */
  QueueKept = 1,
  /** A start made here for a conversation owned elsewhere can be filed
   * for its owner: the store keeps a start inbox, this process files
   * starts (not a visitor, it takes a share), it is open, and the
   * conversation's partition did not lapse here. */
  CanFile = 2,
  /** With `CanFile`: the store can move a conversation that has nothing
   * anywhere to this process (`postgres.takeIdleHere`, docs/decisions/0101):
   * a direct start of one owned elsewhere is answered `TakeHere` first. */
  CanTakeHere = 4,
  End = 8,
}

/** What the host knows of a decision `Resume` carries (argument `f`, bits;
 * docs/decisions/0065): facts only it can see — approval ids live in its
 * side tables, not in the core. `MatchesPending` is the former
 * `approvalMatches` flag, so its value stays 1. */
export const enum ResumeFact {
  /** The approval id is the pending approval of the suspended execution. */
  MatchesPending = 1,
  /** The session's ending, not committed yet, is a suspension asking for
   * this approval id. */
  MatchesCommittingSuspension = 2,
  /** Sent again after the recovery `RecoverBeforeResume` asked for. */
  AfterRecovery = 4,
  /** The pending wait is a typed input wait (`humanInput`), not an
   * approval: only a value resumes it (docs/decisions/0075). */
  PendingWaitsForInput = 8,
  /** The decision gives a value (`{ waitId, value }`), not approve or
   * decline. */
  GivesValue = 16,
  /** The value, edited arguments or response failed its schema (the host
   * validated it; the schema's issues travel with the request). */
  ValueRefused = 32,
  /** The pending wait is a keyed event wait (`waitForEvent`): only a
   * signal resumes it (docs/decisions/0077). */
  PendingWaitsForEvent = 64,
  /** The decision is a signal (`env.signal(key, payload)`), found for the
   * wait by its key. */
  GivesSignal = 128,
  /** The signal was stored before its wait was committed and is offered
   * from the store now that the wait is there (docs/decisions/0077). */
  SignalStored = 256,
  /** The pending wait is for a child execution (an agent used as a tool,
   * `agentTool()`): only that child's end resumes it (docs/decisions/0079). */
  PendingWaitsForChild = 512,
  /** The decision is a child execution's outcome, filed by the child's
   * terminal commit, not a person's answer. */
  GivesChildOutcome = 1024,
  /** The pending wait is a timer (`timer()`): only the clock answers it
   * (docs/decisions/0076). */
  PendingWaitsForClock = 2048,
  /** The pending wait carries a due time (`dueAt`: a timer's, or a typed
   * wait's or approval's timeout): the clock may answer it. */
  PendingHasDeadline = 4096,
  /** The clock answers: the due sweep found the wait due, or an
   * administrator fires it now (`{ waitId, fire: true }`). */
  ClockAnswers = 8192,
  End = 16384,
}

/** How the start of a head `Admit` let start ended, as the host read it
 * (`HeadSettled`'s third argument): the store's answer to its preparation,
 * translated, not a decision. What becomes of the head — it leaves, it
 * follows the execution another process prepared, or it is kept and
 * offered again after the backoff, once the conversation is ready, or
 * by the owner — is the core's (docs/decisions/0062, "A failed head is the
 * core's to place"). */
export const enum HeadOutcome {
  None = 0,
  /** Its execution was installed, or the core refused its `Start`: it left. */
  Left = 1,
  // 2 retired (was Back: the host decided that a head refused for now while
  // the store said the conversation was held elsewhere waits). The core
  // decides it now, from `StoreFailed`/`NotNow` and the ownership read.
  /** The store failed its preparation (`STORE`: a lost connection, the
   * database unreachable): the message is still queued there (the
   * preparation removes it only when it commits). */
  StoreFailed = 3,
  /** The store refused it for now (`AGENT_BUSY`, `lease_not_held`: the
   * partition's lease not held here, or not renewed in time; or
   * `EXECUTION_REHYDRATION_REQUIRED`, `lease_lost`: fenced at the epoch it
   * was sent, docs/decisions/0134, 0136): still queued there, for whoever holds
   * the conversation. */
  NotNow = 4,
  /** The store refused it because its execution is there already: another
   * process that held the conversation meanwhile took the message from the
   * queue and prepared it. */
  ExecutionExists = 5,
  /** It cannot stay queued here: its preparation ended it for good (the
   * store wrote it terminal, or refused it for any other reason), its
   * cancel was written meanwhile, or this process's queues are closed
   * (the store keeps the message for the next process). */
  Refused = 6,
}

/** How a start answered, as the host reads it (docs/decisions/0096): an
 * execution id (queued or not), or its refusal's error code as a class.
 * One class for every verdict over a start's answer — a message taken from
 * the durable queue (`queuedRunVerdict`), a schedule's firing
 * (`scheduleFiringVerdict`), a parent's child (`childStartVerdict`), a start
 * filed for this process (`filedStartVerdict`), a keyed start's inner Run
 * (`keyedStartVerdict`, docs/decisions/0102), a refused enqueue
 * (`enqueueRefusalVerdict`, 0110) — so each reads the same facts and
 * decides by its own rules. A translation only (`startAnswerOf`). */
export const enum StartAnswer {
  /** Not made yet. */
  None = 0,
  /** An execution id, its row not queued: run here, or filed for its owner. */
  Started = 1,
  /** An execution id whose row is queued behind a busy conversation. */
  Queued = 2,
  /** `RUNTIME_SHUTDOWN`: this process is closing. */
  Stopping = 3,
  /** `STORE`: the store failed; whether it wrote anything is not known. */
  StoreFailed = 4,
  /** `OFFLOAD_FULL`, `CAPACITY`: a bound of this process was full. */
  Full = 5,
  /** `CORE_FAILED`: the core failed; a recovery decides the outcome. */
  CoreFailed = 6,
  /** `INTERNAL`, or a throw that is not a PhronomyError. */
  Internal = 7,
  /** `EXECUTION_REHYDRATION_REQUIRED`: a recovery must rehydrate its
   * execution first. */
  RehydrationRequired = 8,
  /** `AGENT_BUSY` with no reason: the busy policy refused it (the
   * conversation runs another execution here). */
  BusyByPolicy = 9,
  /** `AGENT_BUSY`, reason `lease_not_held`: another process holds the
   * conversation (it runs there, or here once that lease ends). */
  LeaseNotHeld = 10,
  /** `AGENT_BUSY` with another reason (`recovery_required`: held for a
   * recovery after a store failure). */
  BusyHeld = 11,
  /** `INVALID_INPUT`, reason `execution_exists`: its id is another's
   * already (a keyed start whose key's message or execution is there). */
  ExecutionExists = 12,
  /** Any other error: `QUEUE_FULL`, `AGENT_CLOSED`, a bad input, … */
  Refused = 13,
  End = 14,
}

/** What becomes of a message taken from the durable queue whose Run
 * failed before it ran (`queuedRunVerdict`). */
export const enum QueuedRunVerdict {
  /** An unknown failure class. */
  None = 0,
  /** It stays queued in the store, for this or the next owner, or for a
   * recovery to decide. */
  KeepQueued = 1,
  /** It is written terminal with the Run's error. */
  WriteTerminal = 2,
}

/** What the host read of a schedule row when it asks `scheduleClaimVerdict`
 * (docs/decisions/0087): the row's state as bits; the times themselves
 * (its slots, the cron) stay in the host. */
export const enum ScheduleFact {
  /** A firing is claimed and not settled (`firingSlotAt` is set). */
  FiringPending = 1,
  /** A cron schedule (recurring); else a one-shot one. */
  Recurring = 2,
  /** Its `dueAt` is not after now: its slot is due, or its pending
   * firing's retry time has passed. */
  Due = 4,
  /** Asked by `env.runSchedule` (fire now), not by the sweep. */
  RunNow = 8,
  /** A single owner's first pass: a firing pending now was left by an
   * owner that is gone. */
  OwnerGone = 16,
  /** Its last slot claimed (`lastSlotAt`) is not before now: a firing at
   * this very instant (or after it, on a clock ahead) was made already, so
   * a run now at now would claim that slot, and its keyed start, again
   * (docs/decisions/0098). */
  FiredThisInstant = 32,
  End = 64,
}

/** Which slot a schedule row fires and which comes after it
 * (`scheduleClaimVerdict`); the host computes the times it names. */
export const enum ScheduleClaimVerdict {
  /** Facts that cannot hold together. */
  None = 0,
  /** Not claimed now: nothing is due. */
  Skip = 1,
  /** The pending firing again: its slot and next slot, so the same keyed
   * start runs once. */
  ClaimAgain = 2,
  /** Its due slot — the oldest one missed — fires once; the next slot is
   * the first one strictly after now (every missed slot between is
   * coalesced into this one firing). */
  FireDueThenAfterNow = 3,
  /** A one-shot schedule's slot fires; no next slot (done once settled). */
  FireDueOnce = 4,
  /** Run now: fires at now; the schedule's next slot is kept. Only
   * while its next slot is after now (else that slot is the one fired:
   * `FireDueThenAfterNow`, `FireDueOnce`), so slots only grow. */
  FireNowKeepNext = 5,
  /** Run now of a one-shot schedule: fires at now; done once settled. */
  FireNowOnce = 6,
  /** Run now while a firing is pending: refused (wait for it). */
  RefusePending = 7,
  /** Run now at the instant of its last slot (or before it): refused, it
   * fired at this instant already (docs/decisions/0098). */
  RefuseFiredThisInstant = 8,
}

/** What a claimed firing knows so far, for `scheduleFiringVerdict`. */
export const enum ScheduleFiringFact {
  /** The store applied the claim's compare-and-set: the row was still at
   * the revision read, and active. */
  Claimed = 1,
  /** The conversation's definition is defined here, so its start can be
   * made here. */
  DefinedHere = 2,
  /** The keyed start was refused naming the firing's own keyed execution,
   * and the store has that execution: an earlier claimer of this firing
   * made it (it may have failed since). Read only after a refusal
   * (docs/decisions/0097, 0098). */
  KeyedExecutionFound = 4,
  /** That execution waits in its conversation's queue. */
  KeyedExecutionQueued = 8,
  End = 16,
}

/** What becomes of a firing (`scheduleFiringVerdict`). */
export const enum ScheduleFiringVerdict {
  /** Facts that cannot hold together. */
  None = 0,
  /** The claim did not apply (cancelled, fired by another process, its
   * revision moved): nothing is started. */
  Skip = 1,
  /** Make the keyed start now. */
  Start = 2,
  /** Left pending, claimed again at its retry time (by a process that
   * defines the conversation, or once the refusal passed). */
  LeavePending = 3,
  /** Settle it: started (its execution id recorded). */
  SettleStarted = 4,
  /** Settle it: queued behind a busy conversation. */
  SettleQueued = 5,
  /** Settle it: refused for good; the schedule moves on. */
  SettleRefused = 6,
}

/** What the host learned of a parent's child after its keyed start
 * answered, for `childStartVerdict` (docs/decisions/0079, 0086, 0096).
 * 0: nothing read yet. */
export const enum ChildFact {
  /** The child's row was read (or the read was tried: `Failed`). */
  Read = 1,
  /** The store has the child's row. */
  Found = 2,
  /** The child's row is terminal: it has an outcome to tell. */
  Ended = 4,
  /** Reading the child's row, or giving its outcome to the parent's
   * wait, failed (a lost connection); asked with `ParentRead`: reading
   * the parent's row failed. */
  Failed = 8,
  /** A start made again later came due: the parent's row was read (or the
   * read was tried: `Failed`) to know whether it still waits (decision
   * 0099). Asked with the answer that was made again, never with the
   * child's `Read`, `Found`, `Ended`. */
  ParentRead = 16,
  /** The parent's row is suspended. */
  ParentSuspended = 32,
  /** The parent's row's pending wait is this child wait. */
  ParentOnWait = 64,
  End = 128,
}

/** The next step of a parent's child start (`childStartVerdict`). */
export const enum ChildStartVerdict {
  /** An answer or facts that cannot hold together. */
  None = 0,
  /** Nothing to do here: this process stops (the next one reinstalls the
   * parent's wait and starts the child again), or a start made again
   * later came due with its parent no longer waiting on that wait
   * (answered, cancelled, gone). */
  Drop = 1,
  /** Make the keyed start again later, while the parent's row still waits
   * on that wait: the refusal says nothing of whether the child starts. */
  StartAgainLater = 2,
  /** Read the child's row, then ask again with what it holds. */
  ReadChild = 3,
  /** Give the child's stored outcome to the parent's wait (a wait answered
   * already refuses it). */
  TellOutcome = 4,
  /** Give the start's refusal to the parent's wait as the child's failure:
   * no child execution exists whose end would be filed. */
  TellRefusal = 5,
  /** Leave it: the child runs, and its terminal commit files its end for
   * the parent. */
  Leave = 6,
  /** A start made again later came due and the parent still waits on that
   * wait: make the keyed start now (it follows a child that did start). */
  StartAgain = 7,
}

/** What the host knows of a start filed for this process when its Run
 * answered, for `filedStartVerdict` (docs/decisions/0031, 0062, 0096). */
export const enum FiledStartFact {
  /** The core's last `Admit` verdict on it was `LeaveFiled`: another
   * process holds the conversation. */
  LeftFiled = 1,
  /** The host read whether this process admitted the start's execution id
   * (asked by `AskAdmitted`). */
  AdmittedRead = 2,
  /** This process admitted that execution id (its key started here
   * meanwhile): the busy refusal was by the start itself. */
  AdmittedHere = 4,
  End = 8,
}

/** A filed start's fate in the inbox (`filedStartVerdict`). */
export const enum FiledStartVerdict {
  /** An answer or facts that cannot hold together. */
  None = 0,
  /** It runs, or ran (admitted under its id already): the claim is settled. */
  Ran = 1,
  /** Left claimed for the next owner, or the process that holds the
   * conversation: not refused. */
  Left = 2,
  /** The store failed the write, or refused it for this process's lease:
   * tried again while this process holds the partition at the claim's
   * epoch (I/O, the store's answer). */
  WriteFailed = 3,
  /** Read whether this process admitted its execution id, then ask again
   * with `AdmittedRead`. */
  AskAdmitted = 4,
  /** Refused for good: the refusal is recorded. */
  Refused = 5,
}

/** What the host read of a keyed start whose inner Run was refused, for
 * `keyedStartVerdict` (docs/decisions/0102). 0: nothing read yet. */
export const enum KeyedStartFact {
  /** The host read whether this process admitted the key's execution id
   * (asked by `AskAdmitted`; a read that failed is read as not admitted). */
  AdmittedRead = 1,
  /** This process admitted that execution id: the key's first start still
   * runs, or is being prepared, here. */
  AdmittedHere = 2,
  End = 4,
}

/** What the outer Run of a keyed start (`idempotencyKey`) does once its
 * inner Run was refused (`keyedStartVerdict`). */
export const enum KeyedStartVerdict {
  /** An answer or facts that cannot hold together (a start that was not
   * refused, a read not asked for). */
  None = 0,
  /** Follow the key's execution from the store: it exists, or runs here. */
  Follow = 1,
  /** Read whether this process admitted the key's execution id, then ask
   * again with `AdmittedRead`. */
  AskAdmitted = 2,
  /** Fail the outer Run with the refusal. */
  Fail = 3,
}

/** What the due sweep knows of a wait it fires, for `dueFireVerdict`
 * (docs/decisions/0076, 0102). */
export const enum DueFireFact {
  /** The environment is closed (or closing). */
  Closed = 1,
  /** The conversation's definition is made here: it has a handle to
   * resume through. */
  DefinedHere = 2,
  /** The fire (the conversation's resume) was refused; without it the
   * fire was not made yet. */
  Refused = 4,
  /** The refusal's code is `STORE`: the store failed, the answer may not
   * have landed. */
  StoreFailed = 8,
  End = 16,
}

/** What the due sweep does with a wait (`dueFireVerdict`). */
export const enum DueFireVerdict {
  /** Facts that cannot hold together. */
  None = 0,
  /** Not this process's to fire now (closed, or its definition not made
   * here: its recovery, once defined, reports the suspension again). */
  Skip = 1,
  /** Fire it: the conversation's resume with the clock's answer. */
  Fire = 2,
  /** Throw the refusal: the sweep fires it again on its next pass. */
  TryAgain = 3,
  /** Drop it: answered already, ended, or the environment closing. */
  Drop = 4,
}

/** What the host knows of a signal stored for an event wait's key before
 * the wait was committed, as it offers it to the wait, for
 * `storedSignalVerdict` (docs/decisions/0077, 0102). */
export const enum StoredSignalFact {
  /** The conversation's definition is made here: it has a handle to
   * resume through. */
  DefinedHere = 1,
  /** The wait's resume with the signal answered (landed, or `Refused`). */
  Answered = 2,
  /** The resume was refused. */
  Refused = 4,
  /** The refusal's code is `INVALID_INPUT`: the wait's schema refuses the
   * payload, so it can never resume the wait. */
  PayloadRefused = 8,
  End = 16,
}

/** What becomes of a stored signal offered to its wait
 * (`storedSignalVerdict`). */
export const enum StoredSignalVerdict {
  /** Facts that cannot hold together. */
  None = 0,
  /** Resume the wait with it, then ask again with how it answered. */
  Resume = 1,
  /** Keep it: offered again when the wait is recovered. */
  Keep = 2,
  /** Drop it from the store: given to the wait, or refused for good. */
  Drop = 3,
}

/** What the host knows of a claim in the approval inbox, for
 * `claimedDecisionVerdict` and `claimedStartVerdict` (docs/decisions/0011,
 * 0031, 0086, 0102). */
export const enum ClaimFact {
  /** An approval decision (not a cancel, a retry or a start). */
  Approval = 1,
  /** Claimed before, by a former owner (`claims > 1`). */
  ClaimedAgain = 2,
  /** The host read the approval's decided step (asked by `AskDecided`). */
  DecidedRead = 4,
  /** That step names this very decision: a former owner applied it. */
  DecidedThis = 8,
  /** The inbox is closing (this process stops). */
  Closed = 16,
  /** This process holds (a start: may still hold) the conversation at the
   * claim's epoch. */
  Held = 32,
  End = 64,
}

/** How applying a claimed decision (approval, cancel, retry) answered, as
 * the host reads its refusal's code, for `claimedDecisionVerdict`. */
export const enum ClaimAnswer {
  /** Not applied yet. */
  None = 0,
  /** Applied: its commit landed. */
  Applied = 1,
  /** `RUNTIME_SHUTDOWN`: this process is closing. */
  Stopping = 2,
  /** `CORE_FAILED`: the core failed (decision 0023). */
  CoreFailed = 3,
  /** Any other refusal. */
  Refused = 4,
  End = 5,
}

/** What becomes of a claim in the approval inbox (`claimedDecisionVerdict`,
 * `claimedStartVerdict`). */
export const enum ClaimVerdict {
  /** An answer or facts that cannot hold together. */
  None = 0,
  /** Read the approval's decided step, then ask again with `DecidedRead`. */
  AskDecided = 1,
  /** Apply it here (a decision through the local path, a start through
   * `agent.start`'s), then ask again with how it answered. */
  Apply = 2,
  /** Settle it applied (it ran, or landed, here or by a former owner). */
  SettleApplied = 3,
  /** Settle it refused, the refusal recorded for its filer. */
  SettleRefused = 4,
  /** Leave it claimed: the next owner (or the process that holds the
   * conversation) claims it again and judges it. */
  Leave = 5,
  /** Keep it and judge it again soon (`settleRetryMs`): a start's write the
   * store failed or refused while this process may hold the partition. */
  TryAgain = 6,
}

/** What the host knows of a message whose enqueue the store refused, for
 * `enqueueRefusalVerdict` (docs/decisions/0063, 0110). 0: asked for the
 * enqueue's own write. */
export const enum EnqueueRefusalFact {
  /** The message was being cancelled while its enqueue was written: a
   * cancel by id waits to hear whether a message is queued under its id. */
  Cancelling = 1,
  /** Asked for an observer of the message's Run (`env.wait` on the
   * queued message), whose Run was refused with that answer. */
  Observed = 2,
  End = 4,
}

/** What comes of a refused enqueue (`enqueueRefusalVerdict`). */
export const enum EnqueueRefusalVerdict {
  /** An answer or facts that cannot hold together (not a refusal, a
   * message both cancelling and observed). */
  None = 0,
  /** Tell the cancel that a message is queued under its id after all
   * (another process queued the same key's message): the cancel by id is
   * written for that one. */
  TellCancelQueued = 1,
  /** Tell the cancel that no message is queued under its id. */
  TellCancelGone = 2,
  /** Forget the message here (counted out) and refuse its Run. */
  Forget = 3,
  /** Forget it, refuse its Run, and read the conversation's stored queue
   * and merge it: the id is a message another process queued, which runs
   * here once merged (the keyed start follows it). */
  ForgetAndMerge = 4,
  /** The observer follows the execution under the message's id. */
  Follow = 5,
  /** The observer is told the refusal. */
  Reject = 6,
}

/** What the host read of a start whose preparation the store refused, for
 * `refusedStartVerdict` (docs/decisions/0101, 0112). */
export const enum RefusedStartFact {
  /** The store refused it because the conversation lives in another
   * partition than the one this process placed it in (moved there by
   * another process's `TakeHere`, or its home noted here pruned since),
   * and the store now knows where: a placement asked again places it
   * there. */
  MovedElsewhere = 1,
  /** A start made here (`AdmissionSource.Direct`); else one filed for
   * this process (`Filed`), whose fate the inbox follows. */
  Direct = 2,
  /** It was placed again once already (never twice, but for `MoveRefused`). */
  PlacedAgain = 4,
  /** The refusal is the conversation's move's (`TakeHere` carried out by
   * the preparation itself, docs/decisions/0119): the store did not move
   * it (it has rows, another process moved it first, its lock was not
   * granted) and nothing was written. The move's answer, which a start
   * placed again once already still gets (its move is asked once: the
   * host does not tell `CanTakeHere` again). */
  MoveRefused = 8,
  End = 16,
}

/** What comes of a start whose preparation the store refused
 * (`refusedStartVerdict`). */
export const enum RefusedStartVerdict {
  /** An answer or facts out of range, or an answer that is not a refusal. */
  None = 0,
  /** Its Run is told the refusal (as always before 0112). */
  Deliver = 1,
  /** Nothing was written: the start asks `Admit` again, as a start made
   * now would — filed for the home's holder, or run here if this process
   * holds the home. */
  PlaceAgain = 2,
}

/** How a cancel by id's wait settled, as the host reads its error's class,
 * for `cancelRoundVerdict` (docs/decisions/0026, 0110). */
export const enum CancelAnswer {
  /** Not settled yet. */
  None = 0,
  /** Settled without an error. */
  Settled = 1,
  /** `ExecutionEndedError`: it had ended before the cancel. */
  Ended = 2,
  /** `ExecutionNotFoundError`: no such execution. */
  NotFound = 3,
  /** `ApprovalRequiredError`: it suspended before the cancel reached its
   * session. */
  ApprovalRequired = 4,
  /** `CancellationError`. */
  Cancelled = 5,
  /** Any other error. */
  Refused = 6,
  End = 7,
}

/** What the host read after a cancel by id's wait settled, for
 * `cancelRoundVerdict`. 0: nothing read yet. */
export const enum CancelRoundFact {
  /** The execution's row was read (asked by `ReadRow`). */
  RowRead = 1,
  /** Its row is terminal. */
  RowTerminal = 2,
  End = 4,
}

/** The next step of a cancel by id once its wait settled
 * (`cancelRoundVerdict`). */
export const enum CancelRoundVerdict {
  /** Arguments that cannot hold together (a round past
   * `Limit.CancelRoundsMax`, a terminal row not read). */
  None = 0,
  /** Read the execution's row, then ask again with `RowRead`. */
  ReadRow = 1,
  /** Answer with how the row ended. */
  Answer = 2,
  /** Cancel it again, as the next round: it suspended first. */
  CancelAgain = 3,
  /** Throw the error it settled with (settled without one: the cancel
   * settled but the execution has not ended, `INTERNAL`). */
  Throw = 4,
}

/** What a filer read of a decision it filed for another process (an
 * approval, a cancel, a retry) and of its execution's row, for
 * `filedDecisionVerdict` (docs/decisions/0011, 0026, 0086, 0110). The
 * decision's state is one of `Claimed`, `Applied`, `Refused`, or none of
 * them: filed, not claimed yet. */
export const enum FiledDecisionFact {
  /** A cancel (`env.cancel`); with neither this nor `Retry`, an approval
   * decision. */
  Cancel = 1,
  /** A retry (`env.retry`). */
  Retry = 2,
  /** Claimed by its owner, not settled. */
  Claimed = 4,
  /** Applied by its owner: its commit landed. */
  Applied = 8,
  /** Refused by its owner, the refusal recorded. */
  Refused = 16,
  /** The store has the execution's row. */
  RowFound = 32,
  /** Its row is terminal. */
  RowTerminal = 64,
  /** Its row is suspended. */
  RowSuspended = 128,
  /** Its suspended row's revision is past the last one the filer was told
   * of: it suspended again. */
  SuspendedLater = 256,
  End = 512,
}

/** What a filer read of a start it filed for the process that holds its
 * conversation (or an `env.wait` following an execution run there), for
 * `filedStartFollowVerdict` (docs/decisions/0031, 0047, 0110). */
export const enum FiledStartFollowFact {
  /** An observer (`env.wait`) follows it, not the start's own Run. */
  Observer = 1,
  /** The store has the execution's row. */
  RowFound = 2,
  /** Its row is terminal. */
  RowTerminal = 4,
  /** Its row is suspended. */
  RowSuspended = 8,
  /** Its suspended row's revision is past the last one told: it suspended
   * again. */
  SuspendedLater = 16,
  /** The start is in the inbox (filed, claimed or settled). */
  Filed = 32,
  /** Its owner refused it, the refusal recorded. */
  Refused = 64,
  /** Its message waits in its conversation's durable queue. */
  Queued = 128,
  End = 256,
}

/** What a filer does with a decision or a start it follows, once read
 * (`filedDecisionVerdict`, `filedStartFollowVerdict`). */
export const enum FiledFollowVerdict {
  /** Facts that cannot hold together. */
  None = 0,
  /** Keep following: nothing to tell yet. */
  Follow = 1,
  /** Keep following a start with no row yet (filed, or queued): its Run
   * is told its execution id. */
  FollowFiled = 2,
  /** Tell `approval_required`: it suspended again (a new decision is
   * needed); keep following for its end. */
  AnnounceSuspended = 3,
  /** Settle with how it ended: the terminal event a local Run gets, then
   * the result built from the row (or from its absence). */
  SettleEnded = 4,
  /** Settle an observer from the row as `env.wait` builds it (terminal or
   * suspended; or its absence). */
  SettleFromRow = 5,
  /** Settle with the refusal its owner recorded. */
  SettleRefused = 6,
  /** An approval decision never claimed whose execution ended: it can no
   * longer be applied, settled with the resume's refusal from the row
   * (docs/decisions/0086). */
  RefuseUnapplied = 7,
  /** A start neither in the store nor filed (purged): refused. */
  RefuseGone = 8,
}

/** What `env.wait` read of an execution not live here, for
 * `observedRowVerdict` (docs/decisions/0018, 0031, 0110). 0: no row. */
export const enum ObservedRowFact {
  /** The store has its row. */
  RowFound = 1,
  /** Its row is neither terminal nor suspended: it runs somewhere. */
  RowRunning = 2,
  /** The core's placement of its conversation was read (asked by
   * `AskPlacement`), or its read failed as the environment closed. */
  PlacementRead = 4,
  /** Placed elsewhere: the core files for its owner (`FileForOwner`), or
   * the placement's read failed as the environment closed. */
  RunsElsewhere = 8,
  /** The environment is closed (read with the placement). */
  Closed = 16,
  End = 32,
}

/** What `env.wait` does with a row it read (`observedRowVerdict`). */
export const enum ObservedRowVerdict {
  /** Facts that cannot hold together. */
  None = 0,
  /** Read where the core places its conversation, then ask again with
   * `PlacementRead`. */
  AskPlacement = 1,
  /** Watch the row until the execution ends or suspends (another process
   * runs it). */
  Watch = 2,
  /** Settle with the environment's shutdown. */
  SettleShutdown = 3,
  /** Settle from the row as read (or from its absence). */
  SettleFromRow = 4,
}

/** What a durable watch read of the row it watches, for
 * `durableWatchVerdict` (docs/decisions/0018, 0110). */
export const enum DurableWatchFact {
  /** Its waiter was settled already (by another path). */
  Settled = 1,
  /** The store has the row. */
  RowFound = 2,
  /** The row is terminal. */
  RowTerminal = 4,
  /** The row is suspended. */
  RowSuspended = 8,
  /** Handed over by a lost lease: waits while the message is queued (no
   * row yet) and, unless `Observer`, through a suspension. */
  UntilEnd = 16,
  /** Its waiter is an exact observer (`env.wait`): told a suspension. */
  Observer = 32,
  End = 64,
}

/** What comes of a durable watch's read (`durableWatchVerdict`). */
export const enum DurableWatchVerdict {
  /** Facts that cannot hold together. */
  None = 0,
  /** Keep watching. */
  Keep = 1,
  /** Done: settle the waiter from the row (unless settled already). */
  Done = 2,
}

/** What the host knows of a failed attempt of a model call or a tool, for
 * `failedAttemptVerdict` (docs/decisions/0110). */
export const enum FailedAttemptFact {
  /** The execution's signal fired (a cancel, a timeout). */
  Aborted = 1,
  /** A tool's attempt; without it, a model call's. */
  Tool = 2,
  /** A tool threw a PhronomyError (a refusal of the runtime's, or one the
   * tool chose: not a transient fault). Only with `Tool`. */
  PhronomyError = 4,
  /** The model call's error is transient as the provider's answer reads
   * (a rate limit, an overload, a dropped connection). Never with `Tool`. */
  Transient = 8,
  /** The model call's stream showed text already: it is not started
   * again. Never with `Tool`. */
  Streamed = 16,
  End = 32,
}

/** What comes of a failed attempt (`failedAttemptVerdict`). */
export const enum FailedAttemptVerdict {
  /** Arguments that cannot hold together. */
  None = 0,
  /** Throw its error as it is. */
  Throw = 1,
  /** Retries are used up: throw what the caller makes of every attempt
   * (`MODEL_FAILED` naming each, for a model call). */
  ThrowExhausted = 2,
  /** Wait the backoff's delay and try again. */
  Retry = 3,
}

/** What `toolCallsToStart` answers besides a count (docs/decisions/0087). */
export const enum ToolCallCount {
  /** Arguments that cannot hold together (more started than the batch
   * has, more settled than started, a batch past `Limit.InFlightMax`):
   * never a count, since a batch never has this many calls. */
  Invalid = 65535,
}

/** What a replacing preparation's transaction read about the execution it
 * replaces from (a start's `replaceFrom`), for `replaceVerdict`
 * (docs/decisions/0070, 0087). */
export const enum ReplaceFact {
  /** The store has its row. */
  RowFound = 1,
  /** Its row is this conversation's. */
  SameConversation = 2,
  /** Its row is terminal. */
  Ended = 4,
  /** The conversation's memory holds a record of it. */
  InMemory = 8,
  End = 16,
}

/** Whether a preparation may replace memory from an execution
 * (`replaceVerdict`). The store writes nothing unless `Replace`. */
export const enum ReplaceVerdict {
  /** Facts that cannot hold together (of a row, without a row). */
  None = 0,
  /** Cut memory from its first record, in the preparation's transaction. */
  Replace = 1,
  /** No row and no record: unknown, or pruned with its memory
   * (`EXECUTION_NOT_FOUND`). */
  RefuseUnknown = 2,
  /** Another conversation's (`INVALID_INPUT`, `replace_other_conversation`). */
  RefuseOtherConversation = 3,
  /** Not ended: queued, running, suspended (`replace_unfinished`). */
  RefuseUnfinished = 4,
  /** Ended, but no record of it in memory (`replace_not_in_memory`). */
  RefuseNotInMemory = 5,
}

/** One tool call of a model turn, and what the turn showed so far, for
 * `turnCallVerdict` (docs/decisions/0075, 0080, 0087). */
export const enum TurnCallFact {
  /** Its tool waits (a person's input, the clock, an event, a child). */
  Waits = 1,
  /** The approval policy asks a person before it runs. */
  NeedsApproval = 2,
  /** Its input could not be read or checked: it runs to fail. */
  Failed = 4,
  /** Some call of the turn waits and did not fail. */
  TurnWaits = 8,
  /** An earlier call of the turn was answered `AskWait`. */
  WaitTaken = 16,
  End = 32,
}

/** What becomes of one call of a model turn (`turnCallVerdict`). */
export const enum TurnCallVerdict {
  /** Facts that cannot hold together. */
  None = 0,
  /** It runs with the batch. */
  Run = 1,
  /** The turn's one question: the execution waits on it. */
  AskWait = 2,
  /** It is in the turn's approval request. */
  AskApproval = 3,
  /** Held back by the turn's question, declined once it is answered (the
   * model is told, as for a decline). */
  Decline = 4,
}

/** Conversation flag bits (the `flags` byte of an agent record, `AgentRecord.Flags`). */
export const enum ConversationFlag {
  /** Kept while defined, or while its lease is asked for. */
  Pinned = 1,
  /** A head `Admit` let start has not settled. */
  HeadStarting = 2,
  /** A trigger with new facts came during the recovery: read again. */
  RecoverAgain = 4,
  /** The running recovery reads the durable queue too. */
  ReadQueue = 8,
  /** Let go while owned elsewhere (releasing): used again before the
   * purge, it is owned elsewhere again. */
  ReleasedElsewhere = 16,
  /** A hold is retried after the backoff (`RetryAfter`): the last
   * `RecoveryRequested` said the store leases and recovery runs by
   * itself. Without it a held conversation waits for `env.recover()`. */
  RetriesHeld = 32,
  /** Every decision filed for it is claimed here (`OpenInbox` set it,
   * `CloseInbox` cleared it). */
  InboxOpen = 64,
  /** Held because its last pass left a row for a start being prepared
   * here (`RecoveryFact.StartPreparingHere`): retried at once when the
   * admission that start held is released (`AdmissionReleased`), not
   * after the backoff (docs/decisions/0140). */
  HeldForStart = 128,
}

/** Agent record layout: 24 bytes per agent slot, holding the agent's
 * admission and its conversation's lifecycle (docs/decisions/0062) in one
 * record (docs/decisions/0104).
 *
 * ```
 *  0       4       8       12      16    18    20  21  22  23  24
 *  +-------+-------+-------+-------+-----+-----+---+---+---+---+
 *  | gener | token | recov | aband | use | que | a | p | f | f |
 *  | ation | /exec | epoch | epoch | rs  | ued | l | c | l | a |
 *  +-------+-------+-------+-------+-----+-----+---+---+---+---+
 *  token/exec = the admission's owner token while it is `Admitting`, else
 *    its execution slot + 1 (0: none bound)
 *  al = AdmissionState (low nibble) | AgentLifecycle << 4
 *  pc = ConversationPhase (low nibble) | cause << 4: RecoveryCause while
 *    recovering, HoldCause while held
 *  fl = ConversationFlag bits; fa = failures (the backoff)
 *  abandoned epoch = a recovery left by `ConversationOwned(elsewhere)`
 *    whose pass has not reported its end (0: none)
 * ```
 * A free agent slot keeps its generation; `token/exec` then holds the next
 * free agent slot + 1 (the free list), and every byte from 8 on is zero
 * (its conversation's record, lifecycle `Free`, admission `None`). */
export const enum AgentRecord {
  Generation = 0,
  TokenOrExecutionPlusOne = 4,
  RecoveryEpoch = 8,
  AbandonedEpoch = 12,
  Users = 16,
  Queued = 18,
  AdmissionLifecycle = 20,
  PhaseCause = 21,
  Flags = 22,
  Failures = 23,
  Size = 24,
}

/** Two values sharing a byte of a record: the low nibble and the high one
 * (`AgentRecord.AdmissionLifecycle`, `AgentRecord.PhaseCause`,
 * `ExecutionRecord.StatusPhase`). Every value folded so is below 16. */
export const enum Nibble {
  LowMask = 15,
  HighShift = 4,
}

/** Agent lifecycle (the high nibble of `AdmissionLifecycle`). */
export const enum AgentLifecycle {
  Free = 0,
  Open = 1,
  Closed = 2,
}

/** Execution record layout: 20 bytes per execution slot.
 *
 * ```
 *  0       4       8       12         15  16         19  20
 *  +-------+-------+-------+----------+---+----------+---+
 *  | revis | sess  | gener | agent    | s | waiters, | f |
 *  | ion   | ion   | ation | slot+1   | p | in fli.  | l |
 *  +-------+-------+-------+----------+---+----------+---+
 *  agent slot+1: 24 bits (`Limit.AgentsMaxCeiling` keeps it below 2²⁴)
 *  sp = ExecutionStatus (low nibble) | Phase << 4
 *  waiters, in flight: 24 bits, the waiters (≤ `Limit.WaitersMax`) in the
 *    low 13, the operations in flight (≤ `Limit.InFlightMax`) in the high 11
 *  fl = ExecutionFlag bits
 * ```
 * `agent slot+1` is 0 for a free slot, whose `revision` word then holds the
 * next free execution slot + 1 (the free list). */
export const enum ExecutionRecord {
  Revision = 0,
  Session = 4,
  Generation = 8,
  /** The low 24 bits of the word at 12. */
  AgentSlotPlusOne = 12,
  StatusPhase = 15,
  /** The low 24 bits of the word at 16. */
  WaitersInFlight = 16,
  Flags = 19,
  Size = 20,
}

/** The 24-bit fields of an execution record, read as the low three bytes
 * of a little-endian word. */
export const enum ExecutionBits {
  /** The low 24 bits of a word. */
  Low24 = 16777215,
  /** The waiters: the low 13 bits of `WaitersInFlight`. */
  WaitersMask = 8191,
  /** The operations in flight: the 11 bits above the waiters. */
  InFlightShift = 13,
  InFlightMask = 2047,
  /** Where the byte after a 24-bit field sits in its word. */
  HighByteShift = 24,
}

/** The effect buffer: a count word, then `EffectsMax` effects of `Words`
 * u32 words each. The longest decision (`RecoveryFinished` readying a
 * conversation: `ReadinessChanged`, `OpenAdmissions`, `OpenInbox`,
 * `RestoreQueue`, `StartHead`) writes `EffectsLongestDecision`; sixteen leaves
 * room without making the buffer a cost. The differential fuzz checks that
 * its streams reach the longest decision. */
export const enum EffectLayout {
  CountOffset = 0,
  FirstEffectOffset = 4,
  Words = 5,
  EffectsMax = 16,
  // Sizes and offsets, not kinds: two may be equal.
  // eslint-disable-next-line @typescript-eslint/no-duplicate-enum-values
  EffectsLongestDecision = 5,
}

/** Named limits, with why each has its value. */
export const enum Limit {
  /** Observers of one execution (13 bits of its record, 4,096 fitting); a
   * caller attaching more is a bug, not a workload. */
  WaitersMax = 4096,
  /** Operations one execution may have in flight: one model call or one
   * tool batch (11 bits of its record, 1,024 fitting). A batch larger than
   * this is refused at its barrier. */
  InFlightMax = 1024,
  /** Default agents (a conversation working or suspended is one) an
   * environment may intern: four million, so that an application with a
   * million conversations waiting for approval is never refused
   * (docs/decisions/0066). The agent and conversation tables are laid out
   * for it at init (24 bytes a slot: 96 MiB of linear memory) but a page
   * is touched, and counts in RSS, only once a slot in it was used. */
  AgentsMaxDefault = 4194304,
  /** Default live executions (20 bytes each: 80 MiB at the limit). The
   * table starts at 1,024 slots and doubles as it fills. A limit, not a
   * kind: it may equal another. */
  // eslint-disable-next-line @typescript-eslint/no-duplicate-enum-values
  ExecutionsMaxDefault = 4194304,
  /** Hard ceiling of the execution table, so a slot fits in 24 bits and a
   * table fits well inside 4 GiB of linear memory. */
  ExecutionsMaxCeiling = 16777216,
  /** Hard ceiling of the agent table (384 MiB of linear memory at the
   * ceiling): one below 2²⁴, so an agent slot + 1 fits in the 24 bits an
   * execution record keeps it in (docs/decisions/0104). */
  AgentsMaxCeiling = 16777215,
  /** Host operations using one conversation at once (a u16): more is a
   * leak of `UseEnd`, not a workload. */
  ConversationUsersMax = 65535,
  /** Messages queued here behind one conversation (a u16); the store's
   * queue limit (1,000 by default) refuses long before. A limit, not a
   * kind: it may equal another. */
  // eslint-disable-next-line @typescript-eslint/no-duplicate-enum-values
  QueuedMax = 65535,
  /** The first wait of the backoff, in milliseconds: a killed connection
   * is back at once. */
  RetryMsFirst = 250,
  /** The longest wait: a database restarting takes seconds. */
  RetryMsMax = 5000,
  /** Starts waiting for one conversation to be ready (`WaitUntilReady`):
   * what a caller can pile up behind one recovery, each holding its Run
   * and its input in the host. Past it a start is refused as a held
   * conversation refuses it (`RefuseHeld`). */
  WaitingStartsMax = 10000,
  /** Rounds of a cancel by id: cancel, and — when it suspended before the
   * cancel reached its session — cancel the suspension, this many rounds at
   * most; then the error it settled with is thrown (`cancelRoundVerdict`). */
  CancelRoundsMax = 4,
}
