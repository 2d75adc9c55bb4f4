// The host's side tables, indexed by the numbers the core knows: pending
// requests by request handle, live executions by execution slot, agents by
// agent slot. They hold the JavaScript objects (waiters, sessions, models)
// the core cannot; the core's tables stay the only source of live state.

import { keptStartCallSettings } from "./start-call-settings.js";
import type { AdmissionVerdict } from "../../assembly/abi.js";
import type { ConversationMessage } from "../agent/messages.js";
import type { ResolvedTool } from "../agent/tools.js";
import type { PhronomyError } from "../errors.js";
import type { ExecutionRow, PrepareExecutionResult } from "../store/records.js";
import type { AgentSettings, CheckedVerdict, StartOptions } from "./options.js";
import type { ApprovalRequest } from "./events.js";
import type { Waiter, Waiting } from "./run.js";
import type { Session } from "./session.js";
import type { Span } from "./tracing.js";
import type { DecisionAction } from "./wait-decisions.js";

export interface AgentEntry {
  readonly id: string;
  readonly slot: number;
  readonly generation: number;
  readonly definition: AgentSettings;
  /** The name of the definition this conversation belongs to (stored with
   * each execution); undefined for an agent defined by its id. */
  readonly definitionName?: string;
  readonly tools: readonly ResolvedTool[];
}

export interface StartRequest {
  readonly type: "start";
  readonly agent: AgentEntry;
  readonly waiter: Waiter;
  /** The input's text (the last user message's, for messages). */
  readonly input: string;
  /** The input, when it was given as AI SDK model messages. */
  readonly inputMessages?: ConversationMessage[];
  readonly options: StartOptions;
  readonly deadline: number | undefined;
  executionId?: string;
  /** The input guardrail's verdict on `input`, once asked: a fact of the
   * request, kept with it, so a start prepared again (placed again after a
   * refused preparation, docs/decisions/0112) reads it instead of asking
   * the guardrail a second time (docs/decisions/0116). */
  inputVerdict?: CheckedVerdict;
  /** The input as persisted and sent (after the input guardrail). */
  filteredInput?: string;
  filteredMessages?: ConversationMessage[];
  prepared?: PrepareExecutionResult;
  /** The store's own error when preparation failed. */
  storeError?: PhronomyError;
  /** The first provider barrier the preparation wrote with it (its call id
   * and revision), until the core asks for that barrier (docs/decisions/0014). */
  firstBarrier?: { readonly callId: string; readonly revision: number };
  /** Cancelled while its preparation was in flight (an interrupting
   * message, docs/decisions/0025): its execution, once installed, is
   * cancelled as soon as its session is made. */
  cancelById?: string | null;
  /** A start filed by another process (docs/decisions/0031): the core's
   * last verdict on it, which its fate in the inbox follows
   * (filed-start-fate.ts). */
  readonly filed?: FiledVerdict;
  /** The store was asked to move its conversation here once (`TakeHere`,
   * docs/decisions/0101): asked again, `Admit` is not told it can be. */
  takeHereAsked?: boolean;
  /** How to ask `Admit` again for it, should its preparation be refused
   * (`refusedStartVerdict`, docs/decisions/0112): its source and the post
   * of its admission. */
  placement?: StartPlacementAgain;
  /** Placed again once already (`RefusedStartFact.PlacedAgain`). */
  placedAgain?: boolean;
}

/** A start's admission, to be posted again (`StartRequest.placement`). */
export interface StartPlacementAgain {
  /** Made here (`AdmissionSource.Direct`); else filed for this process. */
  readonly direct: boolean;
  /** Posts its admission again. */
  readonly post: () => void;
}

/** The core's last `Admit` verdict on a filed start (undefined: not asked yet). */
export interface FiledVerdict {
  verdict: AdmissionVerdict | undefined;
}

/** What an execution keeps of its start: the whole request while it runs,
 * without the waiter (its Runs are `ExecutionEntry.waiters`) and slimmed
 * once it suspends (`ExecutionEntry.keepForResume`). */
export type ExecutionStart = Omit<StartRequest, "waiter">;

/** Another observer of a live execution (`env.wait`). */
export interface AttachRequest {
  readonly type: "attach";
  readonly waiter: Waiter;
}

/** `agent.resume`: a decision on the pending approval of a suspended
 * execution. */
export interface ResumeRequest {
  readonly type: "resume";
  readonly waiter: Waiter;
  readonly executionId: string;
  readonly approvalId: string;
  readonly approved: boolean;
  readonly reason: string | null;
  /** The answer beyond approving, checked against its schema (decision 0075). */
  readonly action?: DecisionAction;
  /** Who decided, recorded with the decision. */
  readonly decidedBy?: string | null;
  /** The inbox decision applied, recorded with it (docs/decisions/0086). */
  readonly filedAs?: string | null;
  /** The clock answers (`{ waitId, fire: true }`, the due sweep; decision 0076). */
  readonly clock?: boolean;
  /** Why the answer's schema refused it (`ValueMustMatchSchema`). */
  readonly refusedAnswer?: PhronomyError;
  /** Cancels the resumed run; adopted with the reason once the commit landed. */
  readonly signal: AbortSignal | undefined;
  /** Set when the decision was refused before the core saw a commit. */
  error?: PhronomyError;
  /** The same decision sent again while this one's commit is under way
   * (`FollowResume`): settled as this request settles. */
  followers?: Waiter[];
  /** Sent again after the recovery the core asked for
   * (`ResumeFact.AfterRecovery`): its refusals are worded from that. */
  readonly afterRecovery: boolean;
  /** How to carry out the waits the core may answer instead of a commit
   * (docs/decisions/0065). */
  readonly waits: ResumeWaits;
}

/** The waits `Resume` may answer, each ending in the decision sent to the
 * core again under a new request (host/runtime/resume-waits.ts). */
export interface ResumeWaits {
  /** `RecoverBeforeResume`: recover the held execution, then send again. */
  recoverFirst(): void;
  /** `AwaitSuspensionCommit`: the terminal commit was answered; send again. */
  askAgain(): void;
}

/** How recovery of one durable execution went. */
export type RecoverySettlement = { readonly ok: true; readonly suspended: boolean } | { readonly ok: false; readonly error: PhronomyError };

/** Recovery of one durable, unfinished execution: installed in the core,
 * then continued where its saved facts say. */
export interface RecoveryRequest {
  readonly type: "recovery";
  readonly start: StartRequest;
  readonly row: ExecutionRow;
  readonly continuation: number;
  readonly settle: (settlement: RecoverySettlement) => void;
  /** The start's waiter is a stand-in no application holds (recovery when
   * the environment opens): a suspended execution lets it go. */
  readonly standIn?: boolean;
  /** A retry (docs/decisions/0026): the store write that reopens the row,
   * run once the core installed it (its admission held) and before it
   * continues; cleared once started. */
  reopen?: (() => Promise<unknown>) | undefined;
  /** Called once the reopen is known committed (a retry filed by another
   * process is then marked applied). */
  onReopened?: (() => void) | undefined;
  /** Why the reopen failed: the request's refusal. */
  error?: PhronomyError;
}

/** `env.cancel` of a suspended execution (docs/decisions/0026): its
 * terminal commit, then its outcome to `waiter`. */
export interface CancelRequest {
  readonly type: "cancel";
  readonly waiter: Waiter;
  readonly executionId: string;
  readonly reason: string | undefined;
}

export type PendingRequest = StartRequest | AttachRequest | ResumeRequest | RecoveryRequest | CancelRequest;

/** One live execution in the host's side table. */
export class ExecutionEntry {
  /** Its Runs' waiters; a suspended execution keeps their tails. */
  waiters: Waiting[] = [];
  session: Session | undefined;
  span: Span | undefined;
  /** The last store failure, for effects that carry only a code. */
  storeError: PhronomyError | undefined;
  /** Suspended for approval: durable, holding no live work. */
  suspended = false;
  /** The pending approval while suspended. */
  approvalRequest: ApprovalRequest | undefined;
  /** Called once the terminal commit under way is answered (suspended,
   * ended, or held for recovery): a decision that came for the suspension
   * being committed waits for it here. */
  terminalWatchers: (() => void)[] = [];
  /** The durable row recovery installed the execution from. */
  recoveredFrom: ExecutionRow | undefined;
  /** The reason given with a declined approval, for the model. */
  resumeReason: string | undefined;
  /** The suspended row the approval commit was checked against, for the
   * resumed session: its usage, turns and tool batch, which a decision
   * does not change (so the session reads only the steps). */
  resumeRow: ExecutionRow | undefined;
  /** The signal of the resume request, which cancels the resumed run. */
  resumeSignal: AbortSignal | undefined;
  /** Set by `env.cancel` (docs/decisions/0026) on an execution that is
   * not suspended: its live session, and any session it gets next, is
   * cancelled (the reason, or null without one). */
  cancelById: string | null | undefined;
  /** The error an execution that ended with no session (cancelled while
   * suspended) is delivered with. */
  endedWith: PhronomyError | undefined;
  /** The core's session number of the live session, when there is one. */
  sessionNumber: number | undefined;
  /** The first failure of a listener of this execution (a throw or a
   * rejection), kept by its terminal record (decision 0056). */
  callbackFailure: { readonly eventType: string; readonly message: string } | undefined;
  /** Rebuilt from the index of a suspended execution let go of here, its
   * row not read back yet: no approval request, a start without input
   * (docs/decisions/0066, `rehydration.ts`). */
  bare = false;
  /** The read of its row under way, for a bare entry. */
  rowRead: Promise<void> | undefined;
  /** The row a bare entry was filled from, until a decision's approval
   * commit checks against it (one read, not two, when its revision is
   * still the one committed against). */
  filledFrom: ExecutionRow | undefined;

  constructor(
    readonly slot: number,
    readonly generation: number,
    readonly executionId: string,
    readonly agent: AgentEntry,
    /** The start (or, for a recovered execution, its stand-in); slimmed
     * to what a later session reads once the execution suspends
     * (`keepForResume`). */
    public start: ExecutionStart,
  ) {}

  /** A listener of this execution failed (`delivery.ts`). */
  listenerFailed(eventType: string, error: unknown): void {
    this.callbackFailure ??= { eventType, message: error instanceof Error ? error.message : String(error) };
  }

  /** A suspension may last for days: the start keeps only what a resumed
   * session reads (its input, the options that shape a session and the
   * metadata its tools get), not the preparation's result, the input
   * guardrail or the application's event listener (docs/decisions/0043). */
  keepForResume(): void {
    const { start } = this;
    const { signal, timeoutMs, approvalPolicy, approvalListener, tokenBudget, maxTurns, outputGuardrail, stream, metadata } = start.options;
    const options: StartOptions = {
      ...(signal !== undefined ? { signal } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(approvalPolicy !== undefined ? { approvalPolicy } : {}),
      ...(approvalListener !== undefined ? { approvalListener } : {}),
      ...(tokenBudget !== undefined ? { tokenBudget } : {}),
      ...(maxTurns !== undefined ? { maxTurns } : {}),
      ...(outputGuardrail !== undefined ? { outputGuardrail } : {}),
      ...(stream !== undefined ? { stream } : {}),
      // The resumed session's tools read it.
      ...(metadata !== undefined ? { metadata } : {}),
      // Its model calls and tools too (decision 0071).
      ...keptStartCallSettings(start.options),
    };
    const kept = Object.keys(options).length === 0 ? noOptions : options;
    const input = start.filteredInput ?? start.input;
    const inputMessages = start.filteredMessages ?? start.inputMessages;
    this.start = {
      type: "start",
      agent: start.agent,
      input,
      ...(inputMessages !== undefined ? { inputMessages } : {}),
      options: kept,
      deadline: start.deadline,
      executionId: this.executionId,
      ...(start.cancelById !== undefined ? { cancelById: start.cancelById } : {}),
    };
  }
}

/** The options of a suspended execution's start that gave none. */
const noOptions: StartOptions = Object.freeze({});

/** Request handles: small integers the core echoes back in effects. */
export class RequestTable {
  private readonly pending = new Map<number, PendingRequest>();
  /** The handles of the pending resumes, by execution id, in the order
   * added: every resume asks `resumeOf`, and a scan of `pending` made
   * 10,000 decisions sent at once cost 10,000² steps (npm run bench). */
  private readonly resumesByExecution = new Map<string, Set<number>>();
  private next = 1;

  add(request: PendingRequest): number {
    const handle = this.next;
    this.next = this.next >= 0xffff_fffe ? 1 : this.next + 1;
    this.pending.set(handle, request);
    if (request.type === "resume") this.indexResume(request.executionId, handle);
    return handle;
  }

  private indexResume(executionId: string, handle: number): void {
    const handles = this.resumesByExecution.get(executionId);
    if (handles === undefined) this.resumesByExecution.set(executionId, new Set([handle]));
    else handles.add(handle);
  }

  private unindexResume(executionId: string, handle: number): void {
    const handles = this.resumesByExecution.get(executionId);
    handles?.delete(handle);
    if (handles?.size === 0) this.resumesByExecution.delete(executionId);
  }

  get(handle: number): PendingRequest | undefined {
    return this.pending.get(handle);
  }

  take(handle: number): PendingRequest | undefined {
    const request = this.pending.get(handle);
    this.pending.delete(handle);
    if (request?.type === "resume") this.unindexResume(request.executionId, handle);
    return request;
  }

  /** The agent's starts submitted for preparation and not yet installed
   * (a scan: only an interrupt asks). */
  preparingStartsOf(agent: AgentEntry): StartRequest[] {
    return [...this.pending.values()].filter(
      (request): request is StartRequest => request.type === "start" && request.agent === agent && request.executionId !== undefined,
    );
  }

  /** The start of this execution id submitted here and not yet prepared,
   * if any (a keyed or filed start names its id before it is admitted). */
  startingAs(executionId: string): StartRequest | undefined {
    for (const request of this.pending.values()) if (request.type === "start" && request.executionId === executionId) return request;
    return undefined;
  }

  /** The resume of this execution whose decision is being committed, if
   * any: the first added, other than `except`. */
  resumeOf(executionId: string, except?: number): ResumeRequest | undefined {
    for (const handle of this.resumesByExecution.get(executionId) ?? []) {
      const request = this.pending.get(handle);
      if (handle !== except && request?.type === "resume") return request;
    }
    return undefined;
  }

  /** Every pending request, removed (the core failed: none will be
   * answered). */
  takeAll(): PendingRequest[] {
    const all = [...this.pending.values()];
    this.pending.clear();
    this.resumesByExecution.clear();
    return all;
  }

  get size(): number {
    return this.pending.size;
  }
}
