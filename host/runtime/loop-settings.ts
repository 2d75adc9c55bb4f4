// The AI SDK `ToolLoopAgent` settings an agent definition takes beside its
// call settings (issue 27 item 5, docs/decisions/0071): the loop's own
// (`stopWhen`, `prepareStep`, `onStepFinish`, `onFinish`, `prepareCall`
// with `callOptionsSchema`) and those passed to each model call
// (`toolChoice`, `activeTools`, `experimental_repairToolCall`, `timeout`,
// `experimental_telemetry`). Phronomy drives the loop — each model call is
// one durable step — so the loop's settings are honoured here, at the
// barriers, and the call's are passed to the AI SDK as they are. Bad values
// are refused when the agent is defined.

import type { ModelMessage, TelemetryOptions, TimeoutConfiguration, ToolCallRepairFunction, ToolSet as AiSdkToolSet } from "ai";
import { InvalidInputError } from "../errors.js";
import type { LanguageModel } from "../agent/model.js";
import { toolSchemaOf } from "../agent/schema.js";
import type { Json, UsageTotals } from "../store/records.js";
import { checkToolApproval, type StepToolCall, type ToolApproval } from "./tool-approval.js";

export type { StepToolCall };

/** One step of an execution as the AI SDK's `StepResult` shows it (the
 * members a stop condition, `prepareStep` and `onStepFinish` read): a
 * model call and the results of the tools it called. Rebuilt from the
 * execution's recorded steps after a restart, so a condition decides the
 * same on the same steps. */
export interface AgentStep {
  /** 0 for the execution's first model call. */
  readonly stepNumber: number;
  /** The model's text in this step. */
  readonly text: string;
  /** The model's reasoning text, when it reasoned. */
  readonly reasoningText: string | undefined;
  /** The step's parts in order: reasoning, text, tool calls, tool results
   * and errors (typed loosely, so the AI SDK's own steps fit too). */
  readonly content: readonly (StepContentPart | { readonly type: string })[];
  /** The tool calls the model made. */
  readonly toolCalls: readonly StepToolCall[];
  /** The results of the calls that succeeded (errors are in `content`). */
  readonly toolResults: readonly StepToolResult[];
  /** Why the model stopped (`stop`, `tool-calls`, `length`, …). */
  readonly finishReason: string;
  /** The tokens this step's model call used (a number each, here; the
   * AI SDK's own steps may leave one undefined). */
  readonly usage: StepUsage;
}

/** A step's token counts, as the AI SDK's `LanguageModelUsage` has them. */
export interface StepUsage {
  readonly inputTokens: number | undefined;
  readonly outputTokens: number | undefined;
  readonly totalTokens: number | undefined;
}

/** A tool's result in a step (the AI SDK's `TypedToolResult` members). */
export interface StepToolResult {
  readonly type: "tool-result";
  readonly toolCallId: string;
  readonly toolName: string;
  readonly input: unknown;
  readonly output: unknown;
}

/** A failed or declined tool call in a step's content. */
export interface StepToolError {
  readonly type: "tool-error";
  readonly toolCallId: string;
  readonly toolName: string;
  readonly input: unknown;
  readonly error: unknown;
}

/** A part of a step's content. */
export type StepContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "reasoning"; readonly text: string }
  | StepToolCall
  | StepToolResult
  | StepToolError;

/** Whether the loop stops after a step, given the steps so far (the AI
 * SDK's `StopCondition`: `isStepCount(n)`, `hasToolCall(name)` fit). A
 * method, so the AI SDK's conditions typed for its own `StepResult` fit. */
export interface StopCondition {
  /** Whether to stop, given every step so far. */
  bivariantCall(options: { steps: AgentStep[] }): boolean | PromiseLike<boolean>;
}

/** What `prepareStep` is given before a model call. */
export interface PrepareStepOptions {
  /** The steps finished so far. */
  readonly steps: AgentStep[];
  /** The number of the step about to be made (`steps.length`). */
  readonly stepNumber: number;
  /** The model the step would use. */
  readonly model: LanguageModel;
  /** The messages the step would send, as AI SDK model messages. */
  readonly messages: ModelMessage[];
  /** The instructions the step would send. */
  readonly instructions: string | undefined;
  /** The call options of the start (`options`), when the agent takes them. */
  readonly options: Json | undefined;
}

/** What `prepareStep` may change for one model call. */
export interface PrepareStepResult {
  readonly model?: LanguageModel;
  readonly toolChoice?: ToolChoice;
  readonly activeTools?: readonly string[];
  /** This call's instructions (AI SDK 7's name; `system` is taken too). */
  readonly instructions?: string;
  readonly system?: string;
  /** This call's messages, instead of the conversation (not stored). */
  readonly messages?: ModelMessage[];
  readonly providerOptions?: { readonly [provider: string]: { readonly [key: string]: Json } };
}

/** What `onFinish` is told when an execution completes. */
export interface FinishEvent {
  readonly executionId: string;
  /** The steps of the execution, every one. */
  readonly steps: AgentStep[];
  /** The last step's text. */
  readonly text: string;
  /** The execution's result (the structured output when asked for). */
  readonly output: Json;
  readonly finishReason: string;
  /** Tokens used by every step. */
  readonly totalUsage: UsageTotals;
}

/** What `prepareCall` is given, once per session of an execution (its
 * start, a resume, a recovery): the start's call options and the
 * settings it may change. */
export interface PrepareCallOptions {
  readonly options: Json | undefined;
  readonly model: LanguageModel;
  readonly instructions: string | undefined;
  readonly toolChoice: ToolChoice | undefined;
  readonly activeTools: readonly string[] | undefined;
  readonly providerOptions: { readonly [provider: string]: { readonly [key: string]: Json } } | undefined;
  readonly experimental_context: unknown;
}

/** What `prepareCall` may change for an execution's model calls. Other
 * members (what `({ options, ...rest }) => ({ ...rest })` gives back) are
 * ignored. */
export type PrepareCallResult = Partial<Omit<PrepareCallOptions, "options">> & { readonly system?: string };

/** The AI SDK's tool choice. */
export type ToolChoice = "auto" | "none" | "required" | { readonly type: "tool"; readonly toolName: string };

/** What `onStepStart` is told before a model call. */
export interface StepStartEvent {
  readonly executionId: string;
  /** The model call's id (its barrier's). */
  readonly callId: string;
  /** The number of the step about to be made (`steps.length`). */
  readonly stepNumber: number;
  /** The steps finished so far. */
  readonly steps: AgentStep[];
  /** The model, instructions, messages and tool settings of this call,
   * with what `prepareStep` changed. */
  readonly model: LanguageModel;
  readonly instructions: string | undefined;
  readonly messages: ModelMessage[];
  readonly toolChoice: ToolChoice | undefined;
  readonly activeTools: readonly string[] | undefined;
}

/** What `onToolExecutionStart` is told before a tool call runs. */
export interface ToolExecutionStartEvent {
  readonly executionId: string;
  /** The tool call's id. */
  readonly callId: string;
  readonly toolCall: StepToolCall;
  /** The tool's entry of the definition's `toolsContext`. */
  readonly toolContext: unknown;
  /** The messages the model answered with this call. */
  readonly messages: ModelMessage[];
}

/** What `onToolExecutionEnd` is told after a tool call ran. */
export interface ToolExecutionEndEvent extends ToolExecutionStartEvent {
  /** How long the call ran, retries included. */
  readonly toolExecutionMs: number;
  /** Its result, or its error, as the AI SDK's step content has them. */
  readonly toolOutput:
    | { readonly type: "tool-result"; readonly toolCallId: string; readonly toolName: string; readonly input: unknown; readonly output: Json }
    | { readonly type: "tool-error"; readonly toolCallId: string; readonly toolName: string; readonly input: unknown; readonly error: unknown };
}

/** The callbacks of a definition. */
export interface LoopCallbacks {
  /** Runs before each model call (again after a recovery, for the step
   * being made). */
  readonly onStepStart?: (event: StepStartEvent) => unknown;
  /** `onStepStart`, by the AI SDK's older name (give one of them). */
  readonly experimental_onStepStart?: (event: StepStartEvent) => unknown;
  /** Runs before each tool call runs (again when a recovery runs it again). */
  readonly onToolExecutionStart?: (event: ToolExecutionStartEvent) => unknown;
  /** Runs after each tool call ran, with its result or error. */
  readonly onToolExecutionEnd?: (event: ToolExecutionEndEvent) => unknown;
}

/** The `ToolLoopAgent` settings of a definition. */
export interface LoopSettings extends LoopCallbacks {
  /** Stops the loop after a step (besides a step without tool calls):
   * checked after each step's tools ran, before the next model call's
   * barrier. The execution completes with the last step's text. */
  readonly stopWhen?: StopCondition["bivariantCall"] | readonly StopCondition["bivariantCall"][];
  /** Runs before each model call (again after a recovery, for the step
   * being made) and may change its model, tool choice, active tools,
   * instructions, messages or provider options. */
  readonly prepareStep?: (options: PrepareStepOptions) => PrepareStepResult | undefined | PromiseLike<PrepareStepResult | undefined>;
  /** Runs after each step; after a restart, for the steps recorded but
   * not yet told (at least once: docs/decisions/0071). */
  readonly onStepFinish?: (step: AgentStep) => unknown;
  /** Runs once when an execution completes, before its result is stored. */
  readonly onFinish?: (event: FinishEvent) => unknown;
  /** The tool the model must (or may) call: passed to every model call. */
  readonly toolChoice?: ToolChoice;
  /** The tools the model is shown, by name: passed to every model call. */
  readonly activeTools?: readonly string[];
  /** The order the tools are sent to the provider in, by name (the rest
   * follow, sorted): passed to every model call, for the provider's cache. */
  readonly toolOrder?: readonly string[];
  /** How many tool calls of one step run at once (all, by default): the
   * rest start as calls settle, in the order the model gave them. */
  readonly toolCallConcurrency?: number;
  /** Repairs a tool call the model got wrong (the AI SDK calls it). */
  readonly experimental_repairToolCall?: ToolCallRepairFunction<AiSdkToolSet>;
  /** AI SDK 7's name of `experimental_repairToolCall` (give one of them). */
  readonly repairToolCall?: ToolCallRepairFunction<AiSdkToolSet>;
  /** Which tool calls ask a person, run without asking, or are declined
   * without asking (AI SDK 7's `ToolApprovalConfiguration`): evaluated
   * once per call before its tool barrier; a tool it says nothing of is
   * decided by its own `needsApproval`. */
  readonly toolApproval?: ToolApproval;
  /** The AI SDK's timeout of each model call (ms, or `{ totalMs, stepMs,
   * chunkMs }`); the execution's own running time is `timeoutMs`. */
  readonly timeout?: TimeoutConfiguration<AiSdkToolSet>;
  /** The AI SDK's telemetry of model calls: given, it is used as it is
   * (Phronomy no longer turns telemetry off when no one listens). */
  readonly experimental_telemetry?: TelemetryOptions;
  /** The schema of a start's `options` (a zod or Standard Schema, or an
   * AI SDK schema): a start's options are validated against it. */
  readonly callOptionsSchema?: unknown;
  /** Changes an execution's settings from its start's `options`. */
  readonly prepareCall?: (options: PrepareCallOptions) => PrepareCallResult | PromiseLike<PrepareCallResult>;
}

export const LOOP_SETTING_KEYS = [
  "stopWhen",
  "prepareStep",
  "onStepFinish",
  "onFinish",
  "toolChoice",
  "activeTools",
  "toolOrder",
  "experimental_repairToolCall",
  "repairToolCall",
  "timeout",
  "experimental_telemetry",
  "callOptionsSchema",
  "prepareCall",
  "toolApproval",
  "toolCallConcurrency",
  "onStepStart",
  "experimental_onStepStart",
  "onToolExecutionStart",
  "onToolExecutionEnd",
] as const;

/** The `ToolLoopAgent` settings Phronomy does not take, and why: named in
 * the refusal rather than refused as unknown. */
const REFUSED_LOOP_SETTINGS: { readonly [key: string]: string } = {
  experimental_steering:
    "steering changes a model call while it streams, which a durable step cannot replay after a restart; send the execution a message instead",
};

/** Refuses the `ToolLoopAgent` settings Phronomy does not take, saying why. */
export function refuseUnsupportedLoopSettings(definition: object, what: string): void {
  for (const key of Object.keys(definition)) {
    const why = REFUSED_LOOP_SETTINGS[key];
    if (why !== undefined) throw new InvalidInputError(`${what}: "${key}" is not supported: ${why}`);
  }
}

/** The settings passed to every model call as the AI SDK takes them. */
export const PASSED_LOOP_SETTING_KEYS = ["toolChoice", "activeTools", "toolOrder", "experimental_repairToolCall", "timeout"] as const;

/** Checks a definition's loop settings; `toolNames` are its tools'. */
export function checkLoopSettings(definition: LoopSettings, toolNames: readonly string[], what: string): void {
  const { stopWhen, toolChoice, activeTools, timeout, experimental_telemetry: telemetry, callOptionsSchema } = definition;
  const conditions = Array.isArray(stopWhen) ? stopWhen : stopWhen === undefined ? [] : [stopWhen];
  if (!conditions.every((condition) => typeof condition === "function")) {
    throw new InvalidInputError(`${what}: "stopWhen" must be a stop condition or an array of them (isStepCount(5), hasToolCall("done") from "ai")`);
  }
  if (definition.experimental_repairToolCall !== undefined && definition.repairToolCall !== undefined) {
    throw new InvalidInputError(
      `${what}: give "repairToolCall" or "experimental_repairToolCall" (the same setting, AI SDK 7's name and the older one), not both`,
    );
  }
  checkToolApproval(definition.toolApproval, toolNames, what);
  const concurrency = definition.toolCallConcurrency;
  if (concurrency !== undefined && !(typeof concurrency === "number" && Number.isInteger(concurrency) && concurrency >= 1)) {
    throw new InvalidInputError(`${what}: "toolCallConcurrency" must be an integer of 1 or more, got ${String(concurrency)}`);
  }
  if (definition.onStepStart !== undefined && definition.experimental_onStepStart !== undefined) {
    throw new InvalidInputError(`${what}: give "onStepStart" or "experimental_onStepStart" (the same setting, AI SDK 7's name and the older one), not both`);
  }
  const callbacks = ["onStepStart", "experimental_onStepStart", "onToolExecutionStart", "onToolExecutionEnd"] as const;
  for (const key of ["prepareStep", "onStepFinish", "onFinish", "experimental_repairToolCall", "repairToolCall", "prepareCall", ...callbacks] as const) {
    if (definition[key] !== undefined && typeof definition[key] !== "function") throw new InvalidInputError(`${what}: "${key}" must be a function`);
  }
  if (toolChoice !== undefined) checkToolChoice(toolChoice, toolNames, what);
  checkToolNames(activeTools, "activeTools", toolNames, what);
  checkToolNames(definition.toolOrder, "toolOrder", toolNames, what);
  if (timeout !== undefined && !(isPositiveInteger(timeout) || isPlainObject(timeout))) {
    throw new InvalidInputError(`${what}: "timeout" must be a positive number of ms or { totalMs?, stepMs?, chunkMs? }, got ${String(timeout)}`);
  }
  if (telemetry !== undefined && !isPlainObject(telemetry))
    throw new InvalidInputError(`${what}: "experimental_telemetry" must be an object ({ isEnabled: true, … })`);
  if (callOptionsSchema !== undefined && toolSchemaOf(callOptionsSchema) === undefined) {
    throw new InvalidInputError(`${what}: "callOptionsSchema" must be a schema (zod, a Standard Schema, or jsonSchema() from "ai")`);
  }
  if (definition.prepareCall !== undefined && callOptionsSchema === undefined) {
    throw new InvalidInputError(`${what}: "prepareCall" needs a "callOptionsSchema" for the start's options it is given`);
  }
}

function checkToolNames(names: unknown, key: string, toolNames: readonly string[], what: string): void {
  if (names === undefined) return;
  if (!Array.isArray(names) || !names.every((name) => typeof name === "string")) {
    throw new InvalidInputError(`${what}: "${key}" must be an array of tool names`);
  }
  const unknown = names.find((name) => !toolNames.includes(name));
  if (unknown !== undefined) throw new InvalidInputError(`${what}: "${key}" names "${unknown}", which is not one of its tools (${toolNames.join(", ")})`);
}

function checkToolChoice(toolChoice: unknown, toolNames: readonly string[], what: string): void {
  if (toolChoice === "auto" || toolChoice === "none" || toolChoice === "required") return;
  const named = isPlainObject(toolChoice) && toolChoice.type === "tool" ? toolChoice.toolName : undefined;
  if (typeof named !== "string") {
    throw new InvalidInputError(`${what}: "toolChoice" must be "auto", "none", "required" or { type: "tool", toolName }, got ${JSON.stringify(toolChoice)}`);
  }
  if (!toolNames.includes(named))
    throw new InvalidInputError(`${what}: "toolChoice" names "${named}", which is not one of its tools (${toolNames.join(", ")})`);
}

/** The definition's stop conditions as a list, or undefined without any. */
export function stopConditionsOf(definition: LoopSettings): readonly StopCondition["bivariantCall"][] | undefined {
  const { stopWhen } = definition;
  if (stopWhen === undefined) return undefined;
  return Array.isArray(stopWhen) ? (stopWhen as readonly StopCondition["bivariantCall"][]) : [stopWhen as StopCondition["bivariantCall"]];
}

/** Whether a definition's loop needs its steps kept (a setting reads them). */
export function tracksSteps(definition: LoopSettings): boolean {
  return (
    definition.stopWhen !== undefined
    || definition.prepareStep !== undefined
    || definition.onStepFinish !== undefined
    || definition.onFinish !== undefined
    || definition.onStepStart !== undefined
    || definition.experimental_onStepStart !== undefined
  );
}

function isPositiveInteger(value: unknown): boolean {
  return typeof value === "number" && Number.isFinite(value) && value > 0;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
