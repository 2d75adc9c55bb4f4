// The session runner of one execution (SPEC §5): the live state of its
// agent loop — the conversation, the results not yet durable, usage and
// turns — and the external operations the core tells it to start: the
// model call and the tool batch. It never changes live state itself: every
// outcome goes back to the core as a message (`SessionEvent`,
// `OperationSettled`, `SessionFinished`) through the `SessionHost` it was
// built with, and it only proceeds when the core's effects say so.

import { createHash, randomUUID } from "node:crypto";
import { FailedAttemptFact, Limit, SessionEnding, SessionEventKind, ToolCallCount, TurnCallFact, TurnCallVerdict } from "../../assembly/abi.js";
import type { ModelMessage } from "ai";
import { callModel, type CallOverrides } from "../agent/model.js";
import { assistantMessage, type ConversationMessage, type ModelTurn, type ToolCall, type ToolResult } from "../agent/messages.js";
import { toModelMessages } from "../agent/model-messages.js";
import { isThenable, jsonSchemaOnce } from "../agent/schema.js";
import { isTransientModelError, modelRetriesExhausted, retryAfterMsOf, withRetries } from "../agent/retries.js";
import {
  executeTool,
  toolModelOutput,
  toolNeedsApproval,
  toolOutputToJson,
  validateToolInput,
  validateToolInputNow,
  type ResolvedFunctionTool,
  type ResolvedTool,
} from "../agent/tools.js";
import { CancellationError, PhronomyError, TimeoutError, ToolFailedError, type FailedAttempt, type PhronomyErrorCode } from "../errors.js";
import { recordOf } from "../error-records.js";
import { addUsage } from "../words.js";
import { callFactsOf, type CallFacts } from "./call-facts.js";
import { modelIdOf, modelRequestAttributes, modelResponseAttributes, toolAttributes } from "./gen-ai-attributes.js";
import { callSettingsOf, modelRetrySettingsOf, retrySettingsOf } from "./model-settings.js";
import type { Json, StepRecord, StoredError, StoredStep, ToolCallRecord, UsageTotals } from "../store/records.js";
import type { ApprovalRequest, ExecutionEvent, HandoffRequest } from "./events.js";
import { checkWithGuardrail, guardrailFailedMessage, type AgentSettings, type ApprovalPolicy, type Guardrail } from "./options.js";
import type { Tracer, Span } from "./tracing.js";
import { StepLog, stopConditionMet, tellFinish, tellFinishedSteps } from "./agent-steps.js";
import { callPlanOf, stepOverridesOf, type CallPlan } from "./call-plans.js";
import { stopConditionsOf, tracksSteps, type ToolChoice } from "./loop-settings.js";
import type { StartCallSettings } from "./start-call-settings.js";
import { toolApprovalVerdict } from "./tool-approval.js";
import { eventWaitOf } from "./event-wait.js";
import { callWaits, waitShapeOf } from "./wait-deadlines.js";
import { CallbackFailure, tellStepStart, withToolCallbacks } from "./loop-callbacks.js";
import { childWaitOf } from "./child-wait-request.js";
import { rebuildError } from "../store/error-transfer.js";

/** What the session needs from its environment; implemented by the
 * coordinator, so the session can be read (and tested) on its own. */
export interface SessionHost {
  /** Posts a message to the control loop (applied later, in order). */
  post(message: () => void): void;
  sessionEvent(session: Session, event: SessionEventKind): void;
  operationSettled(session: Session): void;
  sessionFinished(session: Session, ending: SessionEnding): void;
  emit(session: Session, event: ExecutionEvent): void;
  now(): number;
  /** How many calls of a tool batch start now: the core's answer
   * (`ControlCore.toolCallsToStart`, docs/decisions/0087). */
  toolCallsToStart(calls: number, started: number, settled: number, limit: number, finished: number): number;
  /** What becomes of one call of a model turn: the core's answer
   * (`ControlCore.turnCallVerdict`, docs/decisions/0087). */
  turnCallVerdict(facts: number): number;
  /** What comes of a failed attempt of a model call or a tool: the core's
   * answer (`ControlCore.failedAttemptVerdict`, docs/decisions/0110). */
  failedAttemptVerdict(facts: number, number: number, maxRetries: number): number;
}

export interface SessionSettings {
  readonly executionId: string;
  readonly agentId: string;
  readonly definition: AgentSettings;
  readonly tools: readonly ResolvedTool[];
  readonly input: string;
  /** The input as messages, when it was given so (else one user message
   * with `input`). */
  readonly inputMessages?: readonly ConversationMessage[];
  readonly memory: readonly ConversationMessage[];
  readonly approvalPolicy: ApprovalPolicy;
  readonly tokenBudget: number | undefined;
  readonly maxTurns: number;
  readonly outputGuardrail: Guardrail | undefined;
  readonly signal: AbortSignal | undefined;
  /** Stream the model's text as `text_delta` events. */
  readonly stream: boolean;
  /** Absolute time (host clock, ms) this session must end by, and the
   * timeout it came from: each start, resume and recovery has its own
   * deadline (docs/decisions/0016). */
  readonly deadline: number | undefined;
  readonly timeoutMs: number | undefined;
  readonly tracer: Tracer;
  readonly parentSpan: Span | undefined;
  /** The start's metadata, handed to tools. */
  readonly metadata: { readonly [key: string]: Json } | undefined;
  /** The start's AI SDK settings (a model id, provider options,
   * `experimental_context`, call options: decision 0071). */
  readonly start: StartCallSettings;
}

/** How the session ended, for the terminal commit and the delivery. */
export interface TerminalView {
  readonly ending: SessionEnding;
  readonly output: Json;
  readonly error: PhronomyError | undefined;
  readonly approvalRequest: ApprovalRequest | undefined;
  readonly handoff: HandoffRequest | undefined;
}

/** A tool call checked before the barrier: its validated input, or the
 * error its result will carry instead of running. */
interface PlannedCall {
  readonly call: ToolCall;
  readonly tool: ResolvedFunctionTool | undefined;
  readonly input: unknown;
  readonly error: PhronomyError | undefined;
  /** Read back from the store (recovery, resume): validate before running. */
  readonly validateFirst?: boolean;
  /** Its result, given by a person: it does not run (decision 0075). */
  readonly response?: Json;
  /** Declined without running, and why. */
  readonly declined?: string;
  /** Why the definition's toolApproval asks a person (its status's reason). */
  readonly askedBecause?: string;
  /** Its error, given in place of a run (a child's failure, decision 0079). */
  readonly failed?: StoredError;
}

/** Told to the model for a call the definition's toolApproval denied
 * without a reason. */
const deniedByToolApproval = "denied by the agent's toolApproval";

/** The hash an approval is bound to: every call of the batch, its tool and
 * its arguments, in order. A changed argument changes the hash. */
export function argumentsHashOf(batch: readonly { readonly callId: string; readonly toolName: string; readonly input: Json }[]): string {
  const canonical = batch.map(({ callId, toolName, input }) => [callId, toolName, input]);
  return createHash("sha256").update(JSON.stringify(canonical)).digest("hex");
}

/** The names of each tool list's `dynamicTool()`s: a definition's tools are
 * resolved once, so its calls share one set instead of building it at
 * every model answer. */
const dynamicToolNames = new WeakMap<readonly ResolvedTool[], ReadonlySet<string>>();

function dynamicToolNamesOf(tools: readonly ResolvedTool[]): ReadonlySet<string> {
  let names = dynamicToolNames.get(tools);
  if (names === undefined) {
    names = new Set(tools.filter((tool) => tool.kind === "function" && tool.dynamic === true).map((tool) => tool.name));
    dynamicToolNames.set(tools, names);
  }
  return names;
}

export class Session {
  readonly messages: ConversationMessage[];
  /** Results since the last durable barrier; they ride on the next one. */
  private pending: StepRecord[] = [];
  usage: UsageTotals = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  turns = 0;
  terminal: TerminalView | undefined;
  /** The tool batch the next tool barrier writes and the batch then runs. */
  private planned: PlannedCall[] = [];
  private modelCallId = "";
  /** The streamed model call in flight and its text so far: an observer
   * that attaches during the call hears them first (`catchUpEvents`), so
   * a watcher of a recovered execution gets the text as it streams
   * (docs/decisions/0072). Only the one call's text is kept. */
  private streamedCall: { readonly callId: string; readonly turn: number; text: string } | undefined;
  /** The system prompt the last recorded model response carries (call-facts.ts). */
  private systemRecorded: string | undefined;
  private readonly abort = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private detachSignal: (() => void) | undefined;
  private toolsOutstanding = 0;
  /** What the first model call waits for: the agent's memory window, and
   * for a resumed or recovered session its conversation read back from the
   * store. Both load while the first barrier is written. */
  memoryLoaded: Promise<void> = Promise.resolve();
  restored: Promise<void> = Promise.resolve();
  private toolResults: ToolResult[] = [];
  /** The batch's calls started so far (in the model's order; the core
   * says how many more start, `toolCallsToStart`), and the messages they
   * run with. */
  private toolsStarted = 0;
  private toolMessages: ModelMessage[] = [];
  /** A recovered session's start of its running stretch on this process's
   * clock: the next barrier writes it (`metadata.runningSince`), so a later
   * recovery counts only the time the execution ran (docs/decisions/0016). */
  runningSince: number | undefined;
  /** The steps, for a definition whose loop settings read them. */
  private readonly stepLog: StepLog | undefined;
  /** What this session's model calls change, and its tools' context. */
  private callPlan: CallPlan | Promise<CallPlan>;

  constructor(
    readonly slot: number,
    readonly generation: number,
    readonly number: number,
    readonly settings: SessionSettings,
    private readonly host: SessionHost,
  ) {
    this.messages = [...settings.memory, ...(settings.inputMessages ?? [{ role: "user", content: settings.input }])];
    this.stepLog = tracksSteps(settings.definition) ? new StepLog() : undefined;
    this.callPlan = callPlanOf(settings.definition, settings.start);
    // A prepareCall that fails fails the execution at its first model call
    // or tool; this only keeps the rejection from going unhandled meanwhile.
    if (this.callPlan instanceof Promise) this.callPlan.catch(() => undefined);
  }

  /** The session's plan, once worked out. */
  private async planOfCalls(): Promise<CallPlan> {
    return this.callPlan instanceof Promise ? (this.callPlan = await this.callPlan) : this.callPlan;
  }

  /** Messages this session added after its input (answers, tool results). */
  private added = 0;

  private add(message: ConversationMessage): void {
    this.messages.push(message);
    this.added += 1;
  }

  /** Puts earlier executions' conversation before this one's input. */
  useMemory(memory: readonly ConversationMessage[]): void {
    this.messages.unshift(...memory);
  }

  /** A resumed or recovered session: the conversation so far (after the
   * input), the usage and turns already spent, as the store holds them. */
  restore(history: readonly ConversationMessage[], usage: UsageTotals, turns: number, records?: readonly StoredStep[]): void {
    if (records !== undefined) this.stepLog?.restore(records);
    // Before what this session added meanwhile: a recovered batch's results
    // may come back before the history's read does, and must follow the
    // tool calls they answer.
    this.messages.splice(this.messages.length - this.added, 0, ...history);
    this.usage = usage;
    this.turns = turns;
  }

  /** The tool batch as its barrier wrote it: re-dispatched with the same
   * call ids (so the same idempotency keys); inputs are validated again
   * before each call runs. */
  planBatch(batch: readonly ToolCallRecord[]): void {
    this.planned = batch.map((record) => {
      const tool = this.settings.tools.find((candidate) => candidate.name === record.toolName);
      const call: ToolCall = { callId: record.callId, toolName: record.toolName, input: record.input };
      if (tool?.kind !== "function") {
        return {
          call,
          tool: undefined,
          input: record.input,
          error: new PhronomyError(
            "INVALID_INPUT",
            `the recorded tool call ${record.callId} names no function tool "${record.toolName}" of agent "${this.settings.agentId}"`,
          ),
        };
      }
      const answered = {
        ...(record.response !== undefined ? { response: record.response } : {}),
        ...(record.declined !== undefined ? { declined: record.declined } : {}),
        ...(record.failed !== undefined ? { failed: record.failed } : {}),
      };
      return { call, tool, input: record.input, error: undefined, validateFirst: true, ...answered };
    });
  }

  /** Notes on the timeline that this session continues an execution after
   * a restart; the note rides on the next barrier. */
  noteRecovery(phase: string, continuation: string): void {
    this.record("recovered", { phase, continuation, pid: process.pid });
  }

  /** A declined approval: no tool of the batch runs; the model is told each
   * call was declined — as the AI SDK tells it, an `execution-denied`
   * result with the reviewer's reason — and the loop goes on. */
  decline(reason: string | null, goOn: () => void): void {
    const reviewer = reason ?? "declined by a human reviewer";
    // A call the definition's toolApproval denied keeps its own reason.
    const results: ToolResult[] = this.planned.map(({ call, declined }) => {
      const told = declined ?? reviewer;
      return {
        callId: call.callId,
        toolName: call.toolName,
        output: { declined: true, reason: told },
        isError: true,
        modelOutput: { type: "execution-denied", reason: told },
      };
    });
    this.add({ role: "tool", results });
    this.record("tool_results", { results: results as unknown as Json, declined: true });
    const log = this.stepLog;
    log?.toolsSettled(results);
    // A declined step is a finished step: stopWhen decides on it as on any
    // other before the next model call (decision 0081).
    if (log === undefined || stopConditionsOf(this.settings.definition) === undefined) return goOn();
    this.stopOrGoOn(log, Promise.resolve(), goOn);
  }

  get executionId(): string {
    return this.settings.executionId;
  }

  get finished(): boolean {
    return this.terminal !== undefined;
  }

  /** Arms the timeout and the caller's abort signal. Called once, when the
   * core starts the session; an already-aborted signal or a passed deadline
   * ends it at once. */
  begin(): void {
    // Cancelled by id before it began (docs/decisions/0026): nothing to arm.
    if (this.finished) return;
    const { signal, deadline } = this.settings;
    if (signal) {
      if (signal.aborted) return this.cancel();
      const onAbort = (): void => this.host.post(() => this.cancel());
      signal.addEventListener("abort", onAbort, { once: true });
      this.detachSignal = () => signal.removeEventListener("abort", onAbort);
    }
    if (deadline !== undefined) {
      const remaining = deadline - this.host.now();
      if (remaining <= 0) return this.timeOut();
      this.timer = setTimeout(() => this.host.post(() => this.timeOut()), remaining);
      this.timer.unref?.();
    }
  }

  // -- what the barriers write ---------------------------------------------------

  /** The runtime snapshot the next barrier carries. */
  pendingSteps(): StepRecord[] {
    return [...this.pending];
  }

  /** The barrier committed: its steps (and the running stretch's start it
   * carried) are durable now. */
  acknowledgeSteps(count: number, runningSince?: number): void {
    this.pending.splice(0, count);
    if (runningSince !== undefined && runningSince === this.runningSince) this.runningSince = undefined;
  }

  nextModelCallId(): string {
    this.modelCallId = randomUUID();
    return this.modelCallId;
  }

  /** The call id of a barrier written before this session asked for it
   * (the first one, with the preparation). */
  adoptModelCallId(callId: string): void {
    this.modelCallId = callId;
  }

  toolBatch(): ToolCallRecord[] {
    // A result or error given in place of a run stays with its call, so a
    // re-dispatch after this barrier does not run it (decisions 0075, 0079).
    return this.planned.map(({ call, declined, response, failed }) => ({
      callId: call.callId,
      toolName: call.toolName,
      input: call.input,
      idempotencyKey: `${this.executionId}:${call.callId}`,
      ...(declined !== undefined ? { declined } : {}),
      ...(response !== undefined ? { response } : {}),
      ...(failed !== undefined ? { failed } : {}),
    }));
  }

  get toolCount(): number {
    return this.planned.length;
  }

  // -- the model call -----------------------------------------------------------------

  /** Effect StartProviderCall: the barrier is durable; call the model.
   * Transient failures are retried under this same barrier (the call id
   * stays); each failed attempt goes on the timeline. */
  startModelCall(): void {
    const callId = this.modelCallId;
    const { definition, tracer } = this.settings;
    this.turns += 1;
    this.host.emit(this, { type: "model_call_started", executionId: this.executionId, callId, turn: this.turns });
    this.streamedCall = this.settings.stream ? { callId, turn: this.turns, text: "" } : undefined;
    const span = tracer.startChild(this.settings.parentSpan, () => ({
      name: `chat ${modelIdOf(definition.model)}`,
      attributes: { ...modelRequestAttributes(definition), "phronomy.execution_id": this.executionId, "phronomy.call_id": callId, "phronomy.turn": this.turns },
    }));
    let attempts = 0;
    let facts: CallFacts["recorded"] = {};
    const run = async (): Promise<{ turn: ModelTurn; plan: PlannedCall[]; told: boolean }> => {
      await this.memoryLoaded;
      await this.restored;
      // Steps finished but not yet told (a decline, a recovery): told now.
      const told = this.stepLog !== undefined && (await tellFinishedSteps(this.stepLog, definition.onStepFinish));
      // Most definitions have no plan to wait for: no promise per call.
      const overrides = this.stepLog === undefined && !(this.callPlan instanceof Promise) ? this.callPlan.overrides : await this.overridesOfCall();
      let deltas = 0;
      const hooks = {
        signal: this.abort.signal,
        core: this.host,
        // Retried when transient, unless its stream showed text already:
        // the core decides (`failedAttemptVerdict`, decision 0110).
        factsOf: (error: unknown) => (isTransientModelError(error) ? FailedAttemptFact.Transient : 0) | (deltas > 0 ? FailedAttemptFact.Streamed : 0),
        delayHint: (error: unknown) => retryAfterMsOf(error),
        onRetry: (failure: FailedAttempt) => this.host.post(() => this.modelAttemptFailed(callId, failure)),
      };
      const turn = await withRetries(
        modelRetrySettingsOf(definition),
        hooks,
        (attempt) => {
          attempts = attempt;
          return tracer.within(span, () =>
            callModel(definition.model, {
              system: definition.instructions,
              messages: this.messages,
              tools: this.settings.tools,
              signal: this.abort.signal,
              settings: callSettingsOf(definition),
              ...(overrides !== undefined ? { overrides } : {}),
              output: definition.output,
              agentId: this.settings.agentId,
              executionId: this.executionId,
              ...(this.settings.stream
                ? {
                    onTextDelta: (delta: string) => {
                      deltas += 1;
                      this.host.post(() => {
                        if (this.finished) return;
                        if (this.streamedCall?.callId === callId) this.streamedCall.text += delta;
                        this.host.emit(this, { type: "text_delta", executionId: this.executionId, callId, delta });
                      });
                    },
                  }
                : {}),
            }),
          );
        },
        modelRetriesExhausted,
      );
      const called = callFactsOf(definition, overrides, { attempts, messagesSent: this.messages.length, systemRecorded: this.systemRecorded });
      facts = called.recorded;
      this.systemRecorded = called.system;
      return { turn, plan: await this.plan(turn), told };
    };
    run().then(
      ({ turn, plan, told }) =>
        this.host.post(() => {
          this.streamedCall = undefined;
          if (span.recording) span.set(modelResponseAttributes(turn, attempts));
          span.end();
          this.host.operationSettled(this);
          if (told) this.noteStepsTold();
          this.modelAnswered(callId, turn, plan, facts);
        }),
      (error: unknown) =>
        this.host.post(() => {
          this.streamedCall = undefined;
          span.set({ "phronomy.attempts": attempts });
          span.fail(error);
          this.host.operationSettled(this);
          this.operationFailed(error, "MODEL_FAILED");
        }),
    );
  }

  /** What an observer attaching now has missed of the streamed model call
   * in flight: its start and, as one delta, its text so far. Nothing when
   * no streamed call is in flight. */
  catchUpEvents(): ExecutionEvent[] {
    const call = this.streamedCall;
    if (call === undefined || this.finished) return [];
    const { executionId } = this;
    const started: ExecutionEvent = { type: "model_call_started", executionId, callId: call.callId, turn: call.turn };
    return call.text.length === 0 ? [started] : [started, { type: "text_delta", executionId, callId: call.callId, delta: call.text }];
  }

  /** What the next model call changes of the definition's options: the
   * session's plan, and `prepareStep`'s answer for this step. */
  private async overridesOfCall(): Promise<CallOverrides | undefined> {
    const { definition, start } = this.settings;
    const log = this.stepLog;
    const overrides =
      log === undefined || definition.prepareStep === undefined
        ? this.callPlan instanceof Promise
          ? (await this.planOfCalls()).overrides
          : this.callPlan.overrides
        : await stepOverridesOf(definition, await this.planOfCalls(), log.steps, this.messages, start.options);
    // onStepStart sees the call as prepareStep left it, as in the AI SDK.
    if (log !== undefined && (definition.onStepStart ?? definition.experimental_onStepStart) !== undefined) {
      await tellStepStart(definition, {
        executionId: this.executionId,
        callId: this.modelCallId,
        stepNumber: log.steps.length,
        steps: [...log.steps],
        model: overrides?.model ?? definition.model,
        instructions: overrides?.system ?? definition.instructions,
        messages: (overrides?.messages as ModelMessage[] | undefined) ?? toModelMessages(this.messages),
        toolChoice: (overrides?.toolChoice as ToolChoice | undefined) ?? definition.toolChoice,
        activeTools: overrides?.activeTools ?? definition.activeTools,
      });
    }
    return overrides;
  }

  /** How many steps `onStepFinish` was told of, on the next barrier. */
  private noteStepsTold(): void {
    if (this.stepLog !== undefined) this.record("note", { stepsFinished: this.stepLog.told });
  }

  private modelAttemptFailed(callId: string, failure: FailedAttempt): void {
    if (this.finished) return;
    this.record("model_attempt_failed", { callId, ...failure });
    this.host.emit(this, {
      type: "model_call_retrying",
      executionId: this.executionId,
      callId,
      attempt: failure.attempt,
      delayMs: failure.delayMs ?? 0,
      statusCode: failure.statusCode,
      message: failure.message,
    });
  }

  /** Validates every tool call and asks each tool whether it needs
   * approval, off the control loop (validators and predicates may be
   * async). */
  private async plan(turn: ModelTurn): Promise<PlannedCall[]> {
    const plan: PlannedCall[] = [];
    for (const call of turn.toolCalls) {
      const tool = this.settings.tools.find((candidate) => candidate.name === call.toolName);
      if (!tool) {
        plan.push({
          call,
          tool: undefined,
          input: call.input,
          error: new PhronomyError("INVALID_INPUT", `the model called an unknown tool "${call.toolName}"`),
        });
      } else if (tool.kind === "handoff") {
        plan.push({ call, tool: undefined, input: call.input, error: undefined });
      } else {
        try {
          // Checked without a promise when the schema answers at once; a
          // value `await` would adopt is awaited, as before.
          const checked = validateToolInputNow(tool, call.input);
          plan.push({ call, tool, input: isThenable(checked) ? await checked : checked, error: undefined });
        } catch (error) {
          plan.push({ call, tool, input: call.input, error: asPhronomyError(error, "INVALID_INPUT") });
        }
      }
    }
    return plan;
  }

  /** Decides each call's approval before the tool barrier: the
   * definition's `toolApproval` first (a "denied" call is declined without
   * asking, and written so with the batch), then the start's
   * `approvalPolicy`, then the tool's own `needsApproval`. Returns the
   * batch as decided and the calls that ask a person. */
  private async approvalsOf(plan: readonly PlannedCall[]): Promise<{ decided: PlannedCall[]; needed: PlannedCall[] }> {
    const policy = this.settings.approvalPolicy;
    const { definition } = this.settings;
    const setting = definition.toolApproval;
    if (policy === "never" && setting === undefined) return { decided: [...plan], needed: [] };
    const decided: PlannedCall[] = [];
    const needed: PlannedCall[] = [];
    // The conversation as model messages, made only for a predicate that is
    // handed it (a `toolApproval` setting, a `needsApproval` function): a
    // batch of tools with a boolean `needsApproval` converts nothing.
    let converted: ModelMessage[] | undefined;
    const messages = (): ModelMessage[] => (converted ??= toModelMessages(this.messages));
    const experimental_context = (this.callPlan instanceof Promise ? await this.planOfCalls() : this.callPlan).experimentalContext;
    for (const planned of plan) {
      if (!planned.tool || planned.error) {
        decided.push(planned);
        continue;
      }
      const { callId, toolName } = planned.call;
      const verdict =
        setting === undefined
          ? undefined
          : await toolApprovalVerdict(
              setting,
              { type: "tool-call", toolCallId: callId, toolName, input: planned.input },
              {
                tools: definition.tools,
                toolsContext: definition.toolsContext,
                runtimeContext: experimental_context,
                messages: messages(),
              },
            );
      if (verdict?.type === "denied") {
        decided.push({ ...planned, declined: verdict.reason ?? deniedByToolApproval });
        continue;
      }
      decided.push(planned);
      if (policy === "never") continue;
      if (policy === "always" || verdict?.type === "user-approval") {
        needed.push(verdict?.type === "user-approval" && verdict.reason !== undefined ? { ...planned, askedBecause: verdict.reason } : planned);
        continue;
      }
      if (verdict !== undefined) continue;
      // A boolean `needsApproval` reads no options and is answered here,
      // without a promise per call; a predicate goes through toolNeedsApproval.
      const needsApproval = planned.tool.definition.needsApproval;
      if (typeof needsApproval === "boolean") {
        if (needsApproval) needed.push(planned);
        continue;
      }
      const context = definition.toolsContext?.[toolName];
      const { agentId: conversationId, metadata } = this.settings;
      const options = { toolCallId: callId, messages: messages(), context, experimental_context, conversationId, metadata };
      if (await toolNeedsApproval(planned.tool, planned.input, { executionId: this.executionId, callId }, options)) needed.push(planned);
    }
    return { decided, needed };
  }

  /** The calls of `dynamicTool()`s, by call id, for the chat stream's
   * `dynamic-tool` parts (nothing when there are none). */
  private dynamicCallsOf(turn: ModelTurn): { dynamicCalls?: string[] } {
    if (turn.toolCalls.length === 0) return {};
    const dynamic = dynamicToolNamesOf(this.settings.tools);
    if (dynamic.size === 0) return {};
    const calls = turn.toolCalls.filter((call) => dynamic.has(call.toolName)).map((call) => call.callId);
    return calls.length === 0 ? {} : { dynamicCalls: calls };
  }

  private modelAnswered(callId: string, turn: ModelTurn, plan: PlannedCall[], facts: CallFacts["recorded"]): void {
    if (this.finished) return;
    this.usage = addUsage(this.usage, turn.usage);
    this.settings.parentSpan?.set({ "gen_ai.usage.input_tokens": this.usage.inputTokens, "gen_ai.usage.output_tokens": this.usage.outputTokens });
    this.add(assistantMessage(turn));
    this.stepLog?.modelAnswered(turn);
    this.record("model_response", {
      callId,
      text: turn.text,
      toolCalls: turn.toolCalls as unknown as Json,
      usage: turn.usage as unknown as Json,
      finishReason: turn.finishReason,
      ...(turn.reasoning !== undefined ? { reasoning: turn.reasoning as unknown as Json } : {}),
      ...(turn.sources !== undefined ? { sources: turn.sources as unknown as Json } : {}),
      ...(turn.files !== undefined ? { files: turn.files as unknown as Json } : {}),
      ...(turn.partOrder !== undefined ? { partOrder: turn.partOrder } : {}),
      ...(turn.output !== undefined ? { output: turn.output } : {}),
      ...this.dynamicCallsOf(turn),
      ...facts,
    });
    this.host.emit(this, { type: "model_call_finished", executionId: this.executionId, callId, usage: turn.usage, toolCalls: turn.toolCalls.length });
    const budget = this.settings.tokenBudget;
    if (budget !== undefined && this.usage.totalTokens > budget) {
      return this.fail(
        new PhronomyError("BUDGET_EXCEEDED", `execution ${this.executionId} used ${this.usage.totalTokens} tokens, over its budget of ${budget}`, {
          executionId: this.executionId,
          details: { tokenBudget: budget, used: this.usage.totalTokens },
        }),
      );
    }
    if (turn.toolCalls.length === 0) return this.answer(turn.text, turn.output);
    const handoff = plan.find((planned) => this.settings.tools.find((tool) => tool.name === planned.call.toolName)?.kind === "handoff");
    if (handoff) return this.handOff(handoff.call);
    // Under stopWhen the limit is checked after the step's tools, once the
    // conditions had their say, as the AI SDK's step count does (decision 0081).
    if (this.turns >= this.settings.maxTurns && stopConditionsOf(this.settings.definition) === undefined) return this.failMaxTurns();
    this.planned = plan;
    // Approval predicates may be async: ask off the loop, decide on it.
    this.approvalsOf(plan).then(
      ({ decided, needed }) =>
        this.host.post(() => {
          if (this.finished) return;
          this.planned = decided;
          this.dispatchOrSuspend(needed);
        }),
      (error: unknown) =>
        this.host.post(() => {
          if (!this.finished) this.fail(asPhronomyError(error, "TOOL_FAILED"));
        }),
    );
  }

  private dispatchOrSuspend(needed: PlannedCall[]): void {
    if (this.finished) return;
    const { asking, approvals, heldBack } = this.turnQuestions(needed);
    if (asking) return this.waitForInput(asking, heldBack);
    if (approvals.length === 0) {
      this.host.sessionEvent(this, SessionEventKind.LlmCompletedWithTools);
      return;
    }
    const request: ApprovalRequest = {
      approvalId: randomUUID(),
      executionId: this.executionId,
      agentId: this.settings.agentId,
      toolCalls: approvals.map(({ call, askedBecause }) => ({
        callId: call.callId,
        toolName: call.toolName,
        input: call.input,
        ...(askedBecause !== undefined ? { reason: askedBecause } : {}),
      })),
      argumentsHash: argumentsHashOf(this.toolBatch()),
      requestedAt: this.host.now(),
    };
    this.host.sessionEvent(this, SessionEventKind.ApprovalRequired);
    this.finish({ ending: SessionEnding.Suspended, output: null, error: undefined, approvalRequest: request, handoff: undefined });
  }

  /** One question per turn: the core's verdict on each call of the turn,
   * in the model's order (`turnCallVerdict`, docs/decisions/0087) — the
   * call the execution waits on, the calls its approval asks about, and
   * the calls a wait holds back (declined once it is answered). */
  private turnQuestions(needed: readonly PlannedCall[]): { asking: PlannedCall | undefined; approvals: PlannedCall[]; heldBack: PlannedCall[] } {
    const asked = new Map(needed.map((planned) => [planned.call.callId, planned]));
    const waits = (planned: PlannedCall): boolean => callWaits(planned.tool?.definition);
    const turnWaits = this.planned.some((planned) => waits(planned) && !planned.error);
    const answer = { asking: undefined as PlannedCall | undefined, approvals: [] as PlannedCall[], heldBack: [] as PlannedCall[] };
    for (const planned of this.planned) {
      let facts = turnWaits ? TurnCallFact.TurnWaits : 0;
      if (waits(planned)) facts |= TurnCallFact.Waits;
      if (asked.has(planned.call.callId)) facts |= TurnCallFact.NeedsApproval;
      if (planned.error) facts |= TurnCallFact.Failed;
      if (answer.asking !== undefined) facts |= TurnCallFact.WaitTaken;
      const verdict = this.host.turnCallVerdict(facts) as TurnCallVerdict;
      if (verdict === TurnCallVerdict.AskWait) answer.asking = planned;
      else if (verdict === TurnCallVerdict.AskApproval) answer.approvals.push(asked.get(planned.call.callId) as PlannedCall);
      else if (verdict === TurnCallVerdict.Decline) answer.heldBack.push(planned);
      else if (verdict !== TurnCallVerdict.Run) throw new Error(`phronomy: the core answered no verdict for tool call ${planned.call.callId} (facts ${facts})`);
    }
    return answer;
  }

  /** A `humanInput()` call: the execution waits for its value, as for an
   * approval (one wait, kind `input`, decision 0075). One question at a
   * time: the turn's other calls that need approval, and further
   * `humanInput()` calls, are declined once the value is given (`heldBack`,
   * the core's verdict); the rest run with it. */
  private waitForInput(asking: PlannedCall, heldBack: readonly PlannedCall[]): void {
    const { call } = asking;
    const schema = asking.tool?.definition.waitsFor;
    const childAgent = asking.tool?.definition.childAgent;
    const responseSchema = schema === undefined || childAgent !== undefined ? undefined : jsonSchemaOnce(schema);
    const requestedAt = this.host.now();
    // A waitForEvent() call: the wait is keyed by its input (decision 0077).
    const event = eventWaitOf(asking.tool?.definition.waitsForEvent, call.toolName, asking.input, requestedAt, this.executionId);
    if (event.error !== undefined) return this.fail(event.error);
    let shape: Pick<ApprovalRequest, "kind" | "child" | "dueAt">;
    try {
      // An agentTool() call waits for its child execution (decision 0079);
      // a timer() call, or a wait with a timeout, records its due time (0076).
      shape = childAgent
        ? {
            kind: "child",
            child: childWaitOf(
              childAgent,
              { executionId: this.executionId, conversationId: this.settings.agentId },
              { callId: call.callId, input: asking.input },
            ),
          }
        : asking.tool === undefined
          ? { kind: "input" }
          : waitShapeOf(asking.tool.definition, call, requestedAt);
    } catch (error) {
      return this.fail(asPhronomyError(error, childAgent ? "INVALID_INPUT" : "TOOL_FAILED"));
    }
    const request: ApprovalRequest = {
      approvalId: randomUUID(),
      executionId: this.executionId,
      agentId: this.settings.agentId,
      toolCalls: [{ callId: call.callId, toolName: call.toolName, input: call.input }],
      argumentsHash: argumentsHashOf(this.toolBatch()),
      requestedAt,
      ...shape,
      ...event.wait,
      ...(responseSchema !== undefined ? { responseSchema } : {}),
      ...(heldBack.length > 0 ? { declinedCalls: heldBack.map((planned) => planned.call.callId) } : {}),
    };
    this.host.sessionEvent(this, SessionEventKind.ApprovalRequired);
    this.finish({ ending: SessionEnding.Suspended, output: null, error: undefined, approvalRequest: request, handoff: undefined });
  }

  /** The final answer: the text, or the structured output when the agent
   * asked for one (the guardrail reads its JSON text; a redaction
   * replaces the object by the redacted text). */
  private answer(text: string, structured: Json | undefined): void {
    // A guardrail that throws blocks (decision 0056): the run fails, durably.
    const verdict = checkWithGuardrail(this.settings.outputGuardrail, text);
    if (verdict.action === "block") {
      const message =
        verdict.failed === undefined
          ? `the output guardrail blocked the answer of execution ${this.executionId}: ${verdict.reason}`
          : guardrailFailedMessage("output", `of execution ${this.executionId}`, verdict.failed);
      const details = { reason: verdict.reason, ...(verdict.failed !== undefined ? { guardrailFailed: true } : {}) };
      return this.fail(new PhronomyError("OUTPUT_BLOCKED", message, { executionId: this.executionId, agentId: this.settings.agentId, details }));
    }
    const output = verdict.action === "redact" ? verdict.text : (structured ?? text);
    const log = this.stepLog;
    if (log === undefined) return this.complete(output);
    // onStepFinish for the last step, then onFinish: before the terminal
    // commit, so a crash before it tells them again (decision 0071).
    tellFinish(log, this.settings.definition, this.executionId, output).then(
      (told) =>
        this.host.post(() => {
          if (this.finished) return;
          if (told) this.noteStepsTold();
          this.complete(output);
        }),
      (error: unknown) => this.host.post(() => this.operationFailed(error, "STREAM_CALLBACK")),
    );
  }

  private complete(output: Json): void {
    this.finish({ ending: SessionEnding.Completed, output, error: undefined, approvalRequest: undefined, handoff: undefined });
  }

  private handOff(call: ToolCall): void {
    const tool = this.settings.tools.find((candidate) => candidate.name === call.toolName);
    const input = call.input as { reason?: unknown; input?: unknown } | null;
    const handoff: HandoffRequest = {
      fromAgentId: this.settings.agentId,
      fromExecutionId: this.executionId,
      targetAgentId: tool?.kind === "handoff" ? tool.to : call.toolName,
      callId: call.callId,
      input: (typeof input?.input === "string" ? input.input : this.settings.input) as Json,
      reason: typeof input?.reason === "string" ? input.reason : "",
    };
    this.finish({ ending: SessionEnding.HandedOff, output: null, error: undefined, approvalRequest: undefined, handoff });
  }

  // -- the tool batch -------------------------------------------------------------------

  /** Effect StartToolBatch: the barrier is durable; run every call. */
  startToolBatch(): void {
    this.toolResults = [];
    this.toolsOutstanding = this.planned.length;
    this.toolsStarted = 0;
    this.toolMessages = toModelMessages(this.messages);
    this.startToolsDue();
  }

  /** Starts the calls the core says are due now (toolCallConcurrency holds
   * the rest back, in the model's order); the core counts every call of
   * the batch from its barrier either way. */
  private startToolsDue(): void {
    const due = this.planned.slice(this.toolsStarted, this.toolsStarted + this.toolCallsDue(false));
    this.toolsStarted += due.length;
    for (const planned of due) this.runToolOrFail(planned, this.toolMessages);
  }

  /** The core's count of calls to start now (`toolCallsToStart`). */
  private toolCallsDue(finished: boolean): number {
    const calls = this.planned.length;
    const limit = Math.min(this.settings.definition.toolCallConcurrency ?? 0, Limit.InFlightMax);
    const due = this.host.toolCallsToStart(calls, this.toolsStarted, calls - this.toolsOutstanding, limit, finished ? 1 : 0);
    if (due === ToolCallCount.Invalid) throw new Error(`phronomy: the core refused the tool batch's counts (${calls} calls, ${this.toolsStarted} started)`);
    return due;
  }

  /** A throw while launching one tool call (the application's tracer
   * starting its span) is that call's failure, told to the model like a
   * tool that threw: the core counts each call in flight until it settles
   * (decision 0056). */
  private runToolOrFail(planned: PlannedCall, messages: ModelMessage[]): void {
    if (planned.declined !== undefined) {
      const told = planned.declined;
      const { callId, toolName } = planned.call;
      const declined = { callId, toolName, output: { declined: true, reason: told }, isError: true, modelOutput: { type: "execution-denied", reason: told } };
      this.host.post(() => this.toolSettled(declined));
      return;
    }
    try {
      this.runTool(planned, messages);
    } catch (error) {
      const { callId, toolName } = planned.call;
      this.host.post(() => this.toolSettled({ callId, toolName, output: recordOf(error, "TOOL_FAILED") as unknown as Json, isError: true }));
    }
  }

  /** One tool call: its execute gets the AI SDK's options and Phronomy's;
   * a tool that opted in (`maxRetries`) is run again after a failure with
   * the same idempotency key, each failed attempt on the timeline. */
  private runTool(planned: PlannedCall, messages: ModelMessage[]): void {
    const { call, tool } = planned;
    const { definition, tracer } = this.settings;
    const idempotencyKey = `${this.executionId}:${call.callId}`;
    this.host.emit(this, { type: "tool_call_started", executionId: this.executionId, callId: call.callId, toolName: call.toolName, idempotencyKey });
    const span = tracer.startChild(this.settings.parentSpan, () => ({
      name: `execute_tool ${call.toolName}`,
      attributes: {
        ...toolAttributes(call.toolName, call.callId, tool?.description),
        "phronomy.execution_id": this.executionId,
        "phronomy.call_id": call.callId,
        "phronomy.tool": call.toolName,
      },
    }));
    const run = async (): Promise<{ output: Json; modelOutput: Json | undefined }> => {
      if (planned.error) throw planned.error;
      // A person gave this call's result: it stands for the run.
      if (planned.response !== undefined) return { output: planned.response, modelOutput: undefined };
      if (planned.failed !== undefined) throw rebuildError(planned.failed as Parameters<typeof rebuildError>[0]);
      if (!tool) throw new PhronomyError("INVALID_INPUT", `no tool "${call.toolName}"`);
      const input = planned.validateFirst ? await validateToolInput(tool, planned.input) : planned.input;
      const experimental_context = (this.callPlan instanceof Promise ? await this.planOfCalls() : this.callPlan).experimentalContext;
      const signal = this.abort.signal;
      const hooks = {
        signal,
        core: this.host,
        // A tool's throw is retried unless it is a PhronomyError: the core
        // decides (`failedAttemptVerdict`, decision 0110).
        factsOf: (error: unknown) => FailedAttemptFact.Tool | (error instanceof PhronomyError ? FailedAttemptFact.PhronomyError : 0),
        onRetry: (failure: FailedAttempt) => this.host.post(() => this.toolAttemptFailed(call, failure)),
      };
      const output = await withRetries(
        retrySettingsOf(definition, tool.definition.maxRetries ?? 0),
        hooks,
        (attempt) =>
          tracer.within(span, () =>
            executeTool(tool.definition, input, {
              toolCallId: call.callId,
              messages,
              abortSignal: signal,
              context: definition.toolsContext?.[call.toolName],
              experimental_context,
              idempotencyKey,
              executionId: this.executionId,
              conversationId: this.settings.agentId,
              metadata: this.settings.metadata,
              attempt,
              signal,
              callId: call.callId,
            }),
          ),
        toolRetriesExhausted(call),
      );
      const json = toolOutputToJson(call.toolName, call.callId, output);
      return { output: json, modelOutput: await toolModelOutput(tool.definition, call.toolName, call.callId, input, output) };
    };
    // Only a call that runs its tool is told to onToolExecution*.
    const runs = planned.error === undefined && planned.response === undefined && planned.failed === undefined && tool !== undefined;
    const started = {
      executionId: this.executionId,
      callId: call.callId,
      toolCall: { type: "tool-call" as const, toolCallId: call.callId, toolName: call.toolName, input: planned.input },
      toolContext: definition.toolsContext?.[call.toolName],
      messages,
    };
    (runs ? withToolCallbacks(definition, started, () => this.host.now(), run) : run()).then(
      ({ output, modelOutput }) =>
        this.host.post(() => {
          span.end();
          this.toolSettled({ callId: call.callId, toolName: call.toolName, output, isError: false, ...(modelOutput !== undefined ? { modelOutput } : {}) });
        }),
      (error: unknown) =>
        this.host.post(() => {
          span.fail(error);
          // A callback that threw fails the execution, not the tool: the
          // failure first, so the settled call does not complete the batch.
          if (error instanceof CallbackFailure) this.operationFailed(error.error, "STREAM_CALLBACK");
          this.toolSettled({ callId: call.callId, toolName: call.toolName, output: recordOf(error, "TOOL_FAILED") as unknown as Json, isError: true });
        }),
    );
  }

  private toolAttemptFailed(call: ToolCall, failure: FailedAttempt): void {
    if (this.finished) return;
    this.record("tool_attempt_failed", { callId: call.callId, toolName: call.toolName, ...failure });
    this.host.emit(this, {
      type: "tool_call_retrying",
      executionId: this.executionId,
      callId: call.callId,
      toolName: call.toolName,
      attempt: failure.attempt,
      delayMs: failure.delayMs ?? 0,
      message: failure.message,
    });
  }

  private toolSettled(result: ToolResult): void {
    this.host.operationSettled(this);
    if (this.finished) return this.dropWaitingTools();
    this.toolResults.push(result);
    this.host.emit(this, {
      type: "tool_call_finished",
      executionId: this.executionId,
      callId: result.callId,
      toolName: result.toolName,
      isError: result.isError,
    });
    this.toolsOutstanding -= 1;
    this.startToolsDue();
    if (this.toolsOutstanding > 0) return;
    const order = new Map(this.planned.map(({ call }, index) => [call.callId, index]));
    const results = [...this.toolResults].sort((a, b) => (order.get(a.callId) ?? 0) - (order.get(b.callId) ?? 0));
    this.add({ role: "tool", results });
    this.record("tool_results", { results: results as unknown as Json });
    const log = this.stepLog;
    if (log === undefined) return this.toolsCompleted();
    this.afterStep(log, results);
  }

  /** The session ended with calls held back by toolCallConcurrency: they
   * never run, and settle now so the core stops counting them. */
  private dropWaitingTools(): void {
    if (this.toolCallsDue(true) !== 0) throw new Error("phronomy: the core started a tool call after its session ended");
    const dropped = this.planned.length - this.toolsStarted;
    this.toolsStarted = this.planned.length;
    for (let index = 0; index < dropped; index += 1) this.host.operationSettled(this);
  }

  private toolsCompleted(): void {
    this.host.sessionEvent(this, SessionEventKind.ToolsCompleted);
    this.host.sessionEvent(this, SessionEventKind.StateCompleted);
  }

  /** A step's tools returned: `onStepFinish` is told, then the stop
   * conditions decide on the steps so far, before the next model call's
   * barrier — a stop completes the execution with the step's text. */
  private afterStep(log: StepLog, results: readonly ToolResult[]): void {
    // A recovered batch may settle before the steps are read back.
    const settled = this.restored.then(() => log.toolsSettled(results));
    this.stopOrGoOn(log, settled, () => this.toolsCompleted());
  }

  /** Once `ready`, `onStepFinish` is told the finished steps and the stop
   * conditions decide: a stop completes the execution, else `goOn` (the
   * next model call), unless the turn limit is reached (decision 0081). */
  private stopOrGoOn(log: StepLog, ready: Promise<unknown>, goOn: () => void): void {
    const { definition } = this.settings;
    const conditions = stopConditionsOf(definition);
    const decide = async (): Promise<{ told: boolean; stop: boolean }> => {
      await ready;
      const told = await tellFinishedSteps(log, definition.onStepFinish);
      return { told, stop: conditions !== undefined && (await stopConditionMet(conditions, log.steps)) };
    };
    decide().then(
      ({ told, stop }) =>
        this.host.post(() => {
          if (this.finished) return;
          if (told) this.noteStepsTold();
          if (stop) return this.stoppedByCondition(log);
          if (conditions !== undefined && this.turns >= this.settings.maxTurns) return this.failMaxTurns();
          goOn();
        }),
      (error: unknown) => this.host.post(() => this.operationFailed(error, "STREAM_CALLBACK")),
    );
  }

  /** stopWhen held: the execution completes with the last step's text. A
   * definition asking for structured output has none to give — the model
   * gives it only in an answer without tool calls — so it fails saying so,
   * as the AI SDK's `output` throws `NoOutputGeneratedError` (decision 0081). */
  private stoppedByCondition(log: StepLog): void {
    this.record("note", { stoppedBy: "stopWhen", steps: log.steps.length });
    if (this.settings.definition.output === undefined) return this.answer(log.steps.at(-1)?.text ?? "", undefined);
    this.fail(
      new PhronomyError(
        "MODEL_FAILED",
        `stopWhen stopped execution ${this.executionId} after step ${log.steps.length - 1}, which called tools: the structured output asked for (output) comes only from an answer without tool calls; make the condition hold on such a step, or drop it and let the model answer`,
        { executionId: this.executionId, details: { stoppedBy: "stopWhen", steps: log.steps.length, reason: "no_structured_output" } },
      ),
    );
  }

  private failMaxTurns(): void {
    this.fail(
      new PhronomyError(
        "MAX_TURNS_EXCEEDED",
        `execution ${this.executionId} reached its limit of ${this.settings.maxTurns} model turns with tool calls still requested`,
        { executionId: this.executionId, details: { maxTurns: this.settings.maxTurns } },
      ),
    );
  }

  // -- endings -----------------------------------------------------------------------------

  /** Effect SetupFailed, or a failed operation: the session ends failed. */
  fail(error: PhronomyError): void {
    this.finish({ ending: SessionEnding.Failed, output: null, error, approvalRequest: undefined, handoff: undefined });
  }

  private operationFailed(error: unknown, code: PhronomyErrorCode): void {
    if (this.finished) return;
    this.fail(asPhronomyError(error, code));
  }

  /** `env.cancel` of the live execution (docs/decisions/0026): ends the
   * session as its AbortSignal would, the reason in the error. */
  cancelById(reason: string | undefined): void {
    this.cancel(reason);
  }

  /** A cancel was asked for, perhaps after the session had finished (its
   * signal aborted late, `env.cancel`): the terminal record keeps it. */
  get cancelRequested(): boolean {
    return this.cancelAsked || this.settings.signal?.aborted === true;
  }

  private cancelAsked = false;

  /** Cancels the run: in-flight work finishes, the terminal is `cancelled`
   * (the start's signal, an interrupt by a newer message, or `env.cancel`). */
  cancel(reason?: string): void {
    this.cancelAsked = true;
    if (this.finished) return;
    const error = new CancellationError(
      { executionId: this.executionId, agentId: this.settings.agentId, ...(reason !== undefined ? { details: { reason } } : {}) },
      reason,
    );
    this.finish({ ending: SessionEnding.Cancelled, output: null, error, approvalRequest: undefined, handoff: undefined });
  }

  private timeOut(): void {
    if (this.finished) return;
    const timeoutMs = this.settings.timeoutMs ?? 0;
    const error = new TimeoutError(timeoutMs, { executionId: this.executionId, agentId: this.settings.agentId });
    this.finish({ ending: SessionEnding.TimedOut, output: null, error, approvalRequest: undefined, handoff: undefined });
  }

  /** Ends the session once: aborts whatever is in flight (the core defers
   * the terminal until it settles) and tells the core how it ended. */
  private finish(terminal: TerminalView): void {
    if (this.finished) return;
    this.terminal = terminal;
    this.release();
    if (terminal.error) this.abort.abort(terminal.error);
    this.host.sessionFinished(this, terminal.ending);
  }

  /** Effect RecoveryRequired: the execution is left for recovery; stop
   * everything this session started without ending it. */
  abandon(reason: PhronomyError): void {
    if (!this.terminal) this.terminal = { ending: SessionEnding.Failed, output: null, error: reason, approvalRequest: undefined, handoff: undefined };
    this.release();
    this.abort.abort(reason);
  }

  private release(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.detachSignal?.();
    this.detachSignal = undefined;
  }

  private record(kind: StepRecord["kind"], payload: Json): void {
    this.pending.push({ kind, at: this.host.now(), payload });
  }
}

/** A tool that failed on every attempt it opted in to: its result is this
 * error, listing the attempts. */
function toolRetriesExhausted(call: ToolCall): (error: unknown, attempts: FailedAttempt[]) => ToolFailedError {
  return (error, attempts) =>
    new ToolFailedError(
      `tool "${call.toolName}" (call ${call.callId}) failed on all ${attempts.length} attempts: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error, details: { toolName: call.toolName, callId: call.callId, attempts } },
    );
}

export function asPhronomyError(error: unknown, code: PhronomyErrorCode): PhronomyError {
  if (error instanceof PhronomyError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new PhronomyError(code, message, { cause: error });
}

export type { StoredError };
