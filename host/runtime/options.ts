// The options an application passes to `Phronomy.open`, `env.agent`,
// `agent.start` and `agent.resume`, and their validation: an unknown key is
// rejected with InvalidInputError naming it (never ignored), and every value
// is checked before anything is admitted.

import { InvalidInputError } from "../errors.js";
import { assertLanguageModel, MODEL_CALL_SETTING_KEYS, type LanguageModel, type ModelCallSettings } from "../agent/model.js";
import { checkModelSettings } from "./model-settings.js";
import { checkLoopSettings, LOOP_SETTING_KEYS, type LoopSettings, refuseUnsupportedLoopSettings } from "./loop-settings.js";
import { checkStartCallSettings, START_CALL_SETTING_KEYS, type StartCallSettings } from "./start-call-settings.js";
import { preloadAiSdk } from "../agent/ai-sdk.js";
import { isJson } from "../agent/messages.js";
import type { ToolSet } from "../agent/tools.js";
import type { Json } from "../store/records.js";
import type { ApprovalRequest, EventListener } from "./events.js";
import { decidedByLengthMax, type Decision } from "./wait-decisions.js";
import { checkAgentRetention, type AgentRetentionOptions } from "./retention.js";
import { QUEUE_LIMIT_MAX } from "../store/queue.js";
import { IDEMPOTENCY_KEY_LENGTH_MAX } from "../store/start-filing.js";
import { idLengthMax } from "../store/check-id.js";
import { parentLinkOf } from "../store/parent-link.js";

/** What a guardrail decides: let the text through, replace it, or stop the
 * execution (`INPUT_BLOCKED` / `OUTPUT_BLOCKED`, with the reason). */
export type GuardrailVerdict =
  | { readonly action: "allow" }
  | { readonly action: "redact"; readonly text: string }
  | { readonly action: "block"; readonly reason: string };

/** Inspects text before it is persisted and sent (input) or returned
 * (output). Runs on the control thread: keep it quick, deterministic and
 * synchronous. One that throws or answers no verdict blocks, with
 * `details.guardrailFailed` (docs/decisions/0056). */
export type Guardrail = (text: string) => GuardrailVerdict;

/** The verdict of a guardrail as the runtime takes it: one that failed
 * blocks, its `failed` field saying how (for the error's message). */
export type CheckedVerdict = GuardrailVerdict & { readonly failed?: string };

const ALLOW: CheckedVerdict = { action: "allow" };

/** Calls an application's guardrail on the control loop (decision 0056):
 * whatever it does wrong — throws, or answers something that is not a
 * verdict (a promise from an async function, an unknown action, a
 * redaction without text) — fails closed, as a block whose reason says
 * how it failed. Internal (not exported by the package). */
export function checkWithGuardrail(guardrail: Guardrail | undefined, text: string): CheckedVerdict {
  if (guardrail === undefined) return ALLOW;
  let verdict: unknown;
  try {
    verdict = guardrail(text);
  } catch (error) {
    return failed(`threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  }
  return verdictOrFailure(verdict);
}

function verdictOrFailure(verdict: unknown): CheckedVerdict {
  const given = verdict as Partial<{ action: unknown; text: unknown; reason: unknown; then: unknown }> | null;
  if (typeof given !== "object" || given === null) return failed(`answered ${String(verdict)}, not a verdict`);
  if (typeof given.then === "function") return failed("answered a promise (guardrails are synchronous: they run on the control loop)");
  switch (given.action) {
    case "allow":
      return ALLOW;
    case "redact":
      return typeof given.text === "string" ? { action: "redact", text: given.text } : failed("answered a redaction without a text string");
    case "block":
      return { action: "block", reason: typeof given.reason === "string" ? given.reason : String(given.reason) };
    default:
      return failed(`answered the unknown action ${JSON.stringify(given.action)}`);
  }
}

function failed(how: string): CheckedVerdict {
  return { action: "block", reason: `the guardrail ${how}`, failed: how };
}

/** The sentence of the error a text blocked by a failed guardrail fails
 * with (`subject` names whose guardrail it is). */
export function guardrailFailedMessage(which: "input" | "output", subject: string, how: string): string {
  const what = which === "input" ? "input" : "answer";
  const verdicts = `{ action: "allow" }, { action: "redact", text } or { action: "block", reason }`;
  return `the ${which} guardrail ${subject} ${how}, so the ${what} was blocked; fix the guardrail: it must return ${verdicts}`;
}

/** One agent: one conversation with this id (as `env.agent` always did). */
export interface AgentDefinition<OUTPUT = unknown> extends AgentSettings<OUTPUT> {
  /** The agent id: its one conversation's, stored with every execution. */
  readonly id: string;
}

/** A definition with many conversations: `support.conversation(id)`
 * (docs/decisions/0024-conversations.md). The name is stored with each
 * execution, so recovery finds the definition of an unfinished one. */
export interface ConversationDefinition<OUTPUT = unknown> extends AgentSettings<OUTPUT> {
  /** The definition's name, unique in the environment. */
  readonly name: string;
}

/** The type of a run's `output` for a definition's `output` setting: what
 * the AI SDK `Output` parses a complete answer into (`Output.object({
 * schema })`: the schema's type), else the model's text. Read from the
 * `Output`'s shape, so no type of the AI SDK is named here. */
export type OutputOf<SPEC> = SPEC extends {
  /** The `Output`'s parser of a complete answer. */
  parseCompleteOutput(...args: never[]): PromiseLike<infer COMPLETE>;
}
  ? COMPLETE
  : string;

/** What a definition says of its agent, whether it names one id or many
 * conversations. The AI SDK's call settings (`temperature`,
 * `maxOutputTokens`, `topP`, `topK`, `presencePenalty`, `frequencyPenalty`,
 * `stopSequences`, `seed`, `headers`, `providerOptions`) go to the provider
 * on every model call, as `generateText` takes them; the `ToolLoopAgent`
 * settings (`stopWhen`, `prepareStep`, `onStepFinish`, `onFinish`,
 * `toolChoice`, `activeTools`, `experimental_repairToolCall`, `timeout`,
 * `experimental_telemetry`, `callOptionsSchema`, `prepareCall`) are
 * honoured at each step (docs/decisions/0071). */
export interface AgentSettings<OUTPUT = unknown> extends ModelCallSettings, LoopSettings {
  /** An AI SDK language model (v2, v3, v4), or a model id string the AI SDK
   * resolves (the global provider, else the AI Gateway). */
  readonly model: LanguageModel;
  /** Structured output: an AI SDK `Output` (`Output.object({ schema })`);
   * the run's result is the parsed, validated object, typed as the
   * schema's type (`OutputOf`). */
  readonly output?: OUTPUT;
  /** Retries of a model call that failed transiently (HTTP 429, 5xx, a
   * network error): default 2, as the AI SDK; 0 turns them off. */
  readonly maxRetries?: number;
  /** The waits between retries (model calls, and tools that opt in). */
  readonly retryDelay?: { readonly initialMs?: number; readonly maxMs?: number };
  /** Handed to every tool's `execute` and `needsApproval` as
   * `experimental_context` (a start's own, JSON, goes instead). Not
   * stored: a recovered execution gets the definition's value again. */
  readonly experimental_context?: unknown;
  /** Each tool's `context` (AI SDK 7), by tool name: handed to its
   * `execute` and `needsApproval`. Not stored, as `experimental_context`. */
  readonly toolsContext?: { readonly [toolName: string]: unknown };
  /** The system prompt of every model call. */
  readonly instructions?: string;
  /** The tools the model may call, by name (`tool()`, `handoff()`, AI SDK tools). */
  readonly tools?: ToolSet;
  /** Checks (and may redact or block) the input before it is stored and sent. */
  readonly inputGuardrail?: Guardrail;
  /** Checks (and may redact or block) the final output before it is returned. */
  readonly outputGuardrail?: Guardrail;
  /** Journal records of earlier executions shown to the model (default 20). */
  readonly memoryWindow?: number;
  /** Model turns an execution may take while the model still asks for
   * tools (default 16; 100 with `stopWhen`, whose conditions are asked
   * first); past it the execution fails `MAX_TURNS_EXCEEDED`. */
  readonly maxTurns?: number;
  /** Total tokens an execution may use; past it the execution fails
   * `BUDGET_EXCEEDED`. No budget by default. */
  readonly tokenBudget?: number;
  /** Default running time of each execution, in ms (time suspended for
   * approval does not count); past it the execution ends `TIMEOUT`. */
  readonly timeoutMs?: number;
  /** How long this agent's finished executions stay in the store (default:
   * the environment's retention; docs/decisions/0027). */
  readonly retention?: AgentRetentionOptions;
  /** What a start does while this agent runs (or waits for approval on)
   * another execution: "reject" (default), "enqueue" or "interrupt"
   * (docs/decisions/0025-busy-conversations.md). */
  readonly onBusy?: OnBusyPolicy;
  /** Most messages queued behind the running one (default 100, at most
   * 10,000); one more is refused with QueueFullError. */
  readonly queueLimit?: number;
  /** Called with each event of an execution this process recovered (after
   * a restart, a takeover, `env.recover()`): the one listener such an
   * execution has, since the start's `onEvent` died with the process that
   * started it. A live start's events go to the start's own `onEvent`
   * (docs/decisions/0056). */
  readonly onEvent?: EventListener;
}

/** "reject": AgentBusyError (AGENT_BUSY). "enqueue": the message waits in
 * the conversation's durable queue and runs after the ones before it.
 * "interrupt": the running execution is cancelled (a suspended one too)
 * and the message runs next. */
export type OnBusyPolicy = "reject" | "enqueue" | "interrupt";
/** The values of `onBusy`. */
export const ON_BUSY_POLICIES: readonly OnBusyPolicy[] = ["reject", "enqueue", "interrupt"];

/** Which tool calls wait for approval: "tools" (each tool's
 * `needsApproval`), "always" (every call) or "never". */
export type ApprovalPolicy = "tools" | "always" | "never";
/** Called, off the control loop, when the execution suspends for approval:
 * the place to notify whoever decides. */
export type ApprovalListener = (request: ApprovalRequest) => void | Promise<void>;

/** The options of one `agent.start`; those the agent also has override its
 * own. The AI SDK's per-call settings (`providerOptions`, `model` as a
 * model id, `experimental_context`, `options`) are JSON and kept with the
 * execution (start-call-settings.ts). */
export interface StartOptions extends StartCallSettings {
  /** Cancels the execution: what is in flight is aborted and it ends
   * `CANCELLED` (a queued message is dropped). */
  readonly signal?: AbortSignal;
  /** This execution's running time, in ms (the agent's `timeoutMs` otherwise). */
  readonly timeoutMs?: number;
  /** Called with each event of the execution, in order (as `run.events` yields them). */
  readonly onEvent?: EventListener;
  /** "tools" (default): each tool's needsApproval decides; "always": every
   * tool call waits for approval; "never": none does. */
  readonly approvalPolicy?: ApprovalPolicy;
  /** Told when this execution suspends for approval. */
  readonly approvalListener?: ApprovalListener;
  /** This execution's token budget (the agent's otherwise). */
  readonly tokenBudget?: number;
  /** This execution's turn limit (the agent's otherwise). */
  readonly maxTurns?: number;
  /** This execution's input guardrail (the agent's otherwise). */
  readonly inputGuardrail?: Guardrail;
  /** This execution's output guardrail (the agent's otherwise). */
  readonly outputGuardrail?: Guardrail;
  /** Free-form data stored with the execution (JSON). */
  readonly metadata?: { readonly [key: string]: Json };
  /** Stream model output: each model call is the AI SDK's `streamText`,
   * and `text_delta` events carry the text as it arrives. Off by default:
   * one `generateText` per turn. */
  readonly stream?: boolean;
  /** This start's busy policy (the agent's `onBusy` otherwise). */
  readonly onBusy?: OnBusyPolicy;
  /** Runs the start once per (conversation, key), in whichever process it
   * is sent to: a start with a key already started is not run again, its
   * Run follows the first one's execution (docs/decisions/0031). */
  readonly idempotencyKey?: string;
  /** An earlier execution of this conversation whose turn this start
   * replaces: the conversation's memory loses that execution's records and
   * every later one, in the same transaction that prepares this execution,
   * so the model sees the memory before that turn, then this input — what
   * regenerating an answer or editing a message means (docs/decisions/0070).
   * Refused (the run fails, memory untouched) when the execution is
   * unknown (EXECUTION_NOT_FOUND), of another conversation, not ended, or
   * no longer in memory (INVALID_INPUT). Busy handling is unchanged: to
   * replace the answer still running, add `onBusy: "interrupt"`. */
  readonly replaceFrom?: string;
  /** The id the client gave the user message this start answers (a chat
   * page's `UIMessage.id`): kept with the execution, so
   * `conversation.messages()` gives that message back under the same id
   * while the execution is stored (`<executionId>:user` once retention
   * pruned it). `chatRoutes` passes it; decision 0081. */
  readonly messageId?: string;
  /** @internal The parent of a child execution (an `agentTool()` call,
   * docs/decisions/0079): stored with it, so its terminal commit files its
   * end for the parent's wait. Set by the runtime when it starts a child. */
  readonly childOf?: { readonly executionId: string; readonly agentId: string; readonly callId: string; readonly waitId: string };
}

export type { LanguageModel };

/** A decision on a pending wait (`agent.resume`): an approval decided
 * (`approvalId`, `approved`; with `input`, approved with edited arguments;
 * with `respond`, answered in place of the tool), or a typed wait given
 * its value (`waitId`, `value`; docs/decisions/0075). */
export interface ResumeDecision {
  /** The pending approval's id (`ApprovalRequest.approvalId`); another is refused `APPROVAL_MISMATCH`. */
  readonly approvalId?: string;
  /** true runs the tool batch; false declines it and tells the model. */
  readonly approved?: boolean;
  /** Told to the model when declined; recorded either way. */
  readonly reason?: string;
  /** With `approved: true`: the call runs with these arguments instead of
   * the model's (validated against the tool's input schema, hashed and
   * recorded); the model sees the call with them. */
  readonly input?: unknown;
  /** The call does not run: this value is recorded as its result
   * (validated against the tool's output schema when it has one). */
  readonly respond?: unknown;
  /** The call `input` or `respond` is for, when the approval covers more
   * than one; the batch's other calls run as approved. */
  readonly callId?: string;
  /** Who decided (free text, at most 256 characters), recorded with the decision. */
  readonly decidedBy?: string;
  /** A typed wait's id (`ApprovalRequest.approvalId` of kind `input`). */
  readonly waitId?: string;
  /** A typed wait's value: validated against its `responseSchema` (refused
   * `INVALID_INPUT` with the schema's issues, the wait still pending), then
   * the call's result. */
  readonly value?: unknown;
  /** `true`: the clock answers the wait now — a timer fires (its result
   * `{ firedAt }`), a wait with a timeout ends timed out — as the due sweep
   * does at its due time (docs/decisions/0076). With `waitId`. */
  readonly fire?: true;
  /** Called with each event of the resumed execution. */
  readonly onEvent?: EventListener;
  /** Cancels the resumed execution (as `start`'s signal does). */
  readonly signal?: AbortSignal;
}

export const RESUME_DECISION_KEYS = [
  "approvalId",
  "approved",
  "reason",
  "input",
  "respond",
  "callId",
  "decidedBy",
  "waitId",
  "value",
  "fire",
  "onEvent",
  "signal",
] as const;

/** Checks a decision's shape and says what it asks (its answer is checked
 * against its schema once the pending wait is known). */
export function validateResumeDecision(executionId: unknown, decision: ResumeDecision, what: string): Decision {
  if (typeof executionId !== "string" || executionId.length === 0) throw new InvalidInputError(`${what}: the execution id must be a non-empty string`);
  if (typeof decision !== "object" || decision === null)
    throw new InvalidInputError(`${what}: the decision must be an object { approvalId, approved, reason? } or { waitId, value }`);
  rejectUnknownKeys(decision, RESUME_DECISION_KEYS, what);
  if (decision.reason !== undefined && typeof decision.reason !== "string") throw new InvalidInputError(`${what}: "reason" must be a string`);
  if (decision.decidedBy !== undefined && (typeof decision.decidedBy !== "string" || decision.decidedBy.length > decidedByLengthMax))
    throw new InvalidInputError(`${what}: "decidedBy" must be a string of at most ${decidedByLengthMax} characters`);
  if (decision.callId !== undefined && (typeof decision.callId !== "string" || decision.callId.length === 0))
    throw new InvalidInputError(`${what}: "callId" must be the id of a call of the pending wait`);
  functionOrUndefined(decision.onEvent, "onEvent", what);
  if (decision.signal !== undefined && !(decision.signal instanceof AbortSignal)) throw new InvalidInputError(`${what}: "signal" must be an AbortSignal`);
  for (const key of ["input", "respond", "value"] as const) {
    // Stored with the decision (and filed in the inbox as JSON text).
    if (decision[key] !== undefined && !isJson(decision[key])) throw new InvalidInputError(`${what}: "${key}" must be plain JSON (it is stored)`);
  }
  const common = {
    ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
    ...(decision.decidedBy !== undefined ? { decidedBy: decision.decidedBy } : {}),
    ...(decision.onEvent !== undefined ? { onEvent: decision.onEvent } : {}),
    ...(decision.signal !== undefined ? { signal: decision.signal } : {}),
  };
  if (decision.waitId !== undefined) return typedWaitDecision(decision, what, common);
  if (decision.value !== undefined) throw new InvalidInputError(`${what}: "value" answers a typed wait: name it with "waitId", not "approvalId"`);
  if (typeof decision.approvalId !== "string" || decision.approvalId.length === 0)
    throw new InvalidInputError(`${what}: "approvalId" must be the id of the pending approval (or "waitId" the id of a typed wait)`);
  const approvalId = decision.approvalId;
  if (decision.respond !== undefined) {
    if (decision.approved === false || decision.input !== undefined)
      throw new InvalidInputError(`${what}: "respond" answers in place of the tool; it goes without "input" and "approved: false"`);
    return { approvalId, approved: true, given: { kind: "respond", callId: decision.callId, payload: decision.respond }, ...common };
  }
  if (typeof decision.approved !== "boolean") throw new InvalidInputError(`${what}: "approved" must be true or false`);
  if (decision.input !== undefined) {
    if (!decision.approved) throw new InvalidInputError(`${what}: edited "input" goes with "approved: true" (a declined call does not run)`);
    return { approvalId, approved: true, given: { kind: "edit", callId: decision.callId, payload: decision.input }, ...common };
  }
  if (decision.callId !== undefined) throw new InvalidInputError(`${what}: "callId" names the call "input" or "respond" is for; give one of them`);
  return { approvalId, approved: decision.approved, ...common };
}

function typedWaitDecision(decision: ResumeDecision, what: string, common: Partial<Decision>): Decision {
  if (typeof decision.waitId !== "string" || decision.waitId.length === 0) throw new InvalidInputError(`${what}: "waitId" must be the id of the pending wait`);
  for (const key of ["approvalId", "approved", "input", "respond"] as const) {
    if (decision[key] !== undefined) throw new InvalidInputError(`${what}: a typed wait is resumed with { waitId, value }; "${key}" is for approvals`);
  }
  if (decision.fire !== undefined) {
    if (decision.fire !== true) throw new InvalidInputError(`${what}: "fire" must be true (the clock answers the wait now)`);
    if (decision.value !== undefined || decision.callId !== undefined)
      throw new InvalidInputError(`${what}: { waitId, fire: true } is answered by the clock; it goes without "value" and "callId"`);
    return { ...common, approvalId: decision.waitId, approved: true, given: { kind: "fire", callId: undefined, payload: null } };
  }
  if (!("value" in decision) || decision.value === undefined)
    throw new InvalidInputError(`${what}: "value" is the answer the wait is for; give it (or "fire: true" for a timer)`);
  return { ...common, approvalId: decision.waitId, approved: true, given: { kind: "value", callId: decision.callId, payload: decision.value } };
}

/** What a throwing event listener does: "report" logs it; "fail_task"
 * also fails the Run when it threw on `done` or `handoff`. */
export type CallbackErrorPolicy = "report" | "fail_task";

/** Where the runtime writes what it has to say (`OpenOptions.logger`). */
export interface Logger {
  /** Detail worth having when looking into something; optional. */
  debug?(message: string): void;
  /** Something went wrong that the runtime handled or will try again (a throwing listener, an approval inbox that could not be read). */
  warn(message: string): void;
}

export const AGENT_DEFINITION_KEYS = [
  "id",
  "name",
  "model",
  "instructions",
  "tools",
  "inputGuardrail",
  "outputGuardrail",
  "memoryWindow",
  "maxTurns",
  "tokenBudget",
  "timeoutMs",
  "retention",
  "onBusy",
  "queueLimit",
  "onEvent",
  ...MODEL_CALL_SETTING_KEYS,
  "output",
  "maxRetries",
  "retryDelay",
  "experimental_context",
  "toolsContext",
  ...LOOP_SETTING_KEYS,
] as const;

export const START_OPTION_KEYS = [
  "signal",
  "timeoutMs",
  "onEvent",
  "approvalPolicy",
  "approvalListener",
  "tokenBudget",
  "maxTurns",
  "inputGuardrail",
  "outputGuardrail",
  "metadata",
  "stream",
  "onBusy",
  "idempotencyKey",
  "replaceFrom",
  "messageId",
  "childOf",
  ...START_CALL_SETTING_KEYS,
] as const;

/** Agent ids are interned by the host and stored as text: bounded, printable. */
export const AGENT_ID_LENGTH_MAX = 256;
export const MEMORY_WINDOW_DEFAULT = 20;
/** Records of memory an execution may carry into its prompt. */
export const MEMORY_WINDOW_MAX = 1_000;
export const MAX_TURNS_DEFAULT = 16;
/** The model turns of a definition with `stopWhen` and no `maxTurns`: its
 * conditions decide when to stop (the AI SDK applies no other limit once
 * `stopWhen` is given, and `isStepCount(20)` must reach 20); this only ends
 * a loop whose conditions never hold before it costs without bound. Set
 * `maxTurns` to allow more (decision 0081). */
export const MAX_TURNS_UNDER_STOP_WHEN_DEFAULT = 100;

export function rejectUnknownKeys(value: object, allowed: readonly string[], what: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new InvalidInputError(`${what}: unknown option "${key}"; allowed: ${allowed.join(", ")}`);
    }
  }
}

// Control characters are what an agent id may not hold: an id is printed in
// messages and logs.
// eslint-disable-next-line no-control-regex
const controlCharacter = /[\u0000-\u001f]/;

export function validateAgentId(id: unknown, what = "agent id"): string {
  if (typeof id !== "string" || id.length === 0 || id.length > AGENT_ID_LENGTH_MAX || controlCharacter.test(id)) {
    throw new InvalidInputError(`${what} must be a non-empty string of at most ${AGENT_ID_LENGTH_MAX} printable characters, got ${JSON.stringify(id)}`);
  }
  return id;
}

function positiveInteger(value: unknown, key: string, what: string, maximum = Number.MAX_SAFE_INTEGER): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > maximum) {
    throw new InvalidInputError(`${what}: "${key}" must be an integer from 1 to ${maximum}, got ${String(value)}`);
  }
}

function functionOrUndefined(value: unknown, key: string, what: string): void {
  if (value !== undefined && typeof value !== "function") {
    throw new InvalidInputError(`${what}: "${key}" must be a function`);
  }
}

export function validateAgentDefinition(definition: Partial<AgentDefinition & ConversationDefinition>): void {
  if (typeof definition !== "object" || definition === null) throw new InvalidInputError("env.agent(definition): definition must be an object");
  refuseUnsupportedLoopSettings(definition, "env.agent(definition)");
  rejectUnknownKeys(definition, AGENT_DEFINITION_KEYS, "env.agent(definition)");
  if ((definition.id === undefined) === (definition.name === undefined)) {
    throw new InvalidInputError(
      `env.agent(definition): give "id" (one agent) or "name" (a definition with many conversations: agent.conversation(id)), not ${definition.id === undefined ? "neither" : "both"}`,
    );
  }
  if (definition.name !== undefined) validateAgentId(definition.name, "the definition name");
  else validateAgentId(definition.id);
  const what = definition.name !== undefined ? `the definition named "${definition.name}"` : `agent "${definition.id}"`;
  assertLanguageModel(definition.model);
  if (definition.instructions !== undefined && typeof definition.instructions !== "string") {
    throw new InvalidInputError(`${what}: "instructions" must be a string`);
  }
  functionOrUndefined(definition.inputGuardrail, "inputGuardrail", what);
  functionOrUndefined(definition.outputGuardrail, "outputGuardrail", what);
  functionOrUndefined(definition.onEvent, "onEvent", what);
  positiveInteger(definition.memoryWindow, "memoryWindow", what, MEMORY_WINDOW_MAX);
  positiveInteger(definition.maxTurns, "maxTurns", what);
  positiveInteger(definition.tokenBudget, "tokenBudget", what);
  positiveInteger(definition.timeoutMs, "timeoutMs", what);
  checkAgentRetention(definition.retention, what);
  onBusyPolicy(definition.onBusy, what);
  positiveInteger(definition.queueLimit, "queueLimit", what, QUEUE_LIMIT_MAX);
  checkModelSettings(definition, what);
  checkLoopSettings(definition, toolNamesOf(definition.tools), what);
  preloadAiSdk();
}

function toolNamesOf(tools: unknown): string[] {
  return typeof tools === "object" && tools !== null ? Object.keys(tools) : [];
}

function onBusyPolicy(value: unknown, what: string): void {
  if (value !== undefined && !ON_BUSY_POLICIES.includes(value as OnBusyPolicy)) {
    throw new InvalidInputError(`${what}: "onBusy" must be "reject", "enqueue" or "interrupt", got ${JSON.stringify(value)}`);
  }
}

export function validateStartOptions(options: StartOptions, what: string): void {
  if (typeof options !== "object" || options === null) throw new InvalidInputError(`${what}: options must be an object`);
  rejectUnknownKeys(options, START_OPTION_KEYS, what);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new InvalidInputError(`${what}: "signal" must be an AbortSignal`);
  }
  positiveInteger(options.timeoutMs, "timeoutMs", what);
  positiveInteger(options.tokenBudget, "tokenBudget", what);
  positiveInteger(options.maxTurns, "maxTurns", what);
  functionOrUndefined(options.onEvent, "onEvent", what);
  onBusyPolicy(options.onBusy, what);
  if (options.stream !== undefined && typeof options.stream !== "boolean") {
    throw new InvalidInputError(`${what}: "stream" must be a boolean`);
  }
  functionOrUndefined(options.approvalListener, "approvalListener", what);
  functionOrUndefined(options.inputGuardrail, "inputGuardrail", what);
  functionOrUndefined(options.outputGuardrail, "outputGuardrail", what);
  if (options.approvalPolicy !== undefined && !["tools", "always", "never"].includes(options.approvalPolicy)) {
    throw new InvalidInputError(`${what}: "approvalPolicy" must be "tools", "always" or "never", got ${JSON.stringify(options.approvalPolicy)}`);
  }
  if (
    options.idempotencyKey !== undefined
    && (typeof options.idempotencyKey !== "string" || options.idempotencyKey.length === 0 || options.idempotencyKey.length > IDEMPOTENCY_KEY_LENGTH_MAX)
  ) {
    throw new InvalidInputError(
      `${what}: "idempotencyKey" must be a non-empty string of at most ${IDEMPOTENCY_KEY_LENGTH_MAX} characters, got ${JSON.stringify(options.idempotencyKey)?.slice(0, 80)}`,
    );
  }
  if (
    options.replaceFrom !== undefined
    && (typeof options.replaceFrom !== "string" || options.replaceFrom.length === 0 || options.replaceFrom.length > idLengthMax)
  ) {
    throw new InvalidInputError(
      `${what}: "replaceFrom" must be the id of an earlier execution of this conversation (a non-empty string of at most ${idLengthMax} characters), got ${JSON.stringify(options.replaceFrom)?.slice(0, 80)}`,
    );
  }
  if (options.messageId !== undefined && (typeof options.messageId !== "string" || options.messageId.length === 0 || options.messageId.length > idLengthMax)) {
    throw new InvalidInputError(
      `${what}: "messageId" must be the client's id of the user message (a non-empty string of at most ${idLengthMax} characters), got ${JSON.stringify(options.messageId)?.slice(0, 80)}`,
    );
  }
  checkStartCallSettings(options, what);
  if (options.childOf !== undefined) parentLinkOf(options.childOf, what);
  if (options.metadata !== undefined) {
    try {
      JSON.stringify(options.metadata);
    } catch (error) {
      throw new InvalidInputError(`${what}: "metadata" must be JSON`, { cause: error });
    }
  }
}
