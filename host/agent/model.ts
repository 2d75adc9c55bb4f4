// One model call for the agent loop, made with the AI SDK's own
// `generateText` (or `streamText` when the caller wants text deltas) for a
// single step, tools given without `execute` so the SDK returns the calls
// and Phronomy runs them under its own barriers (docs/decisions/0033). The
// answer is normalized into a `ModelTurn`: text, tool calls, reasoning,
// cited sources, generated files (response-parts.ts), usage with its cache and reasoning details, the finish reason, and the
// structured output when the agent asked for one. The AI SDK's own retries
// are off (`maxRetries: 0`): the loop retries in model-retry.ts, where each
// attempt shows on the timeline.
//
// Errors: an abort (the caller's signal fired) is rethrown as it is, so the
// loop can tell cancellation and timeout apart by the signal's reason; a
// Phronomy error is rethrown as it is; anything else the model throws or
// returns wrong becomes a `ModelFailedError` (code MODEL_FAILED) with the
// provider's error as `cause`. A call whose signal fired never yields a
// turn, even when the model ignored the signal and answered anyway.

import type { LanguageModelV2, LanguageModelV3, LanguageModelV4, LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { InvalidInputError, ModelFailedError, PhronomyError } from "../errors.js";
import type { Json } from "../words.js";
import { loadAiSdk, type AiSdk } from "./ai-sdk.js";
import { aiSdkTelemetryListened, telemetryOff } from "./ai-sdk-telemetry.js";
import { directCallPlan, directStep } from "./direct-call.js";
import { isJson, type ConversationMessage, type ModelTurn, type ModelUsage, type ToolCall } from "./messages.js";
import { toModelMessages } from "./model-messages.js";
import { responsePartsOf } from "./response-parts.js";
import type { ToolSpecification } from "./tools.js";

export { conversationToPrompt, finishReasonOf, promptToConversation, toolsToProvider, usageToTotals } from "./prompt.js";

/** Any AI SDK language model this package accepts. Typed by shape so that a
 * model built against another release of `@ai-sdk/provider` still fits:
 * every `LanguageModelV2`, `LanguageModelV3` and `LanguageModelV4` does. */
export interface LanguageModelObject {
  /** The AI SDK language model interface it implements. */
  readonly specificationVersion: "v2" | "v3" | "v4";
  /** The provider's name (`openai.chat`, …), on spans and in errors. */
  readonly provider: string;
  /** The model's id, on spans and in errors. */
  readonly modelId: string;
  /** One answer, whole (the AI SDK's `generateText` calls it). A model
   * that answers only by streaming may leave it out: it is then called
   * through `doStream` for every run (docs/decisions/0072). */
  doGenerate?(options: never): PromiseLike<unknown>;
  /** One answer, streamed (the AI SDK's `streamText` calls it). */
  doStream(options: never): PromiseLike<unknown>;
}

/** A language model object, or a model id string (`"openai/gpt-5"`)
 * resolved as the AI SDK resolves it: by the global provider
 * (`globalThis.AI_SDK_DEFAULT_PROVIDER`) or else the AI Gateway. */
export type LanguageModel = LanguageModelObject | string;

/** The provider types `LanguageModel` stands for, for documentation. */
export type ProviderLanguageModel = LanguageModelV2 | LanguageModelV3 | LanguageModelV4;

/** The AI SDK's call settings, passed to the provider unchanged. */
export type ModelCallSettings = Pick<
  LanguageModelV4CallOptions,
  "maxOutputTokens" | "temperature" | "topP" | "topK" | "presencePenalty" | "frequencyPenalty" | "seed" | "stopSequences" | "headers" | "providerOptions"
>;

/** A definition's settings of `generateText` itself, passed as they are
 * (loop-settings.ts checks them): built with its call settings. */
export interface LoopCallSettings {
  readonly toolChoice?: unknown;
  readonly activeTools?: readonly string[];
  readonly toolOrder?: readonly string[];
  readonly experimental_repairToolCall?: unknown;
  readonly timeout?: unknown;
  /** The definition's `experimental_telemetry`, as AI SDK 7 names it. */
  readonly telemetry?: unknown;
}

/** What one call may change of the options built for its definition. */
export interface CallOverrides {
  readonly model?: LanguageModel;
  readonly system?: string;
  readonly toolChoice?: unknown;
  readonly activeTools?: readonly string[];
  readonly providerOptions?: unknown;
  /** AI SDK model messages sent instead of the conversation's. */
  readonly messages?: readonly unknown[];
}

export { MODEL_CALL_SETTING_KEYS } from "./call-setting-keys.js";

export interface ModelCallRequest {
  /** Instructions sent first, as a system message. */
  readonly system?: string;
  readonly messages: readonly ConversationMessage[];
  readonly tools: readonly ToolSpecification[];
  /** Aborts the provider request; the call then rejects with the abort. */
  readonly signal: AbortSignal;
  /** Called once per text delta, in order, when the model can stream. An
   * exception it throws ends the call and is rethrown as it is. */
  readonly onTextDelta?: (delta: string) => void;
  readonly settings?: ModelCallSettings & LoopCallSettings;
  /** What this call changes of the definition's options (a start's model
   * or provider options, `prepareCall`'s and `prepareStep`'s answers):
   * passed to the AI SDK over them. Absent for most calls. */
  readonly overrides?: CallOverrides;
  /** An AI SDK `Output` (`Output.object({ schema })`): the answer is parsed
   * and validated into `ModelTurn.output`. */
  readonly output?: unknown;
  /** Named in the messages and fields of the errors this call throws. */
  readonly agentId?: string;
  readonly executionId?: string;
}

/** How many tool calls one model turn may ask for. Each becomes a
 * concurrent tool run and a row in the tool barrier; providers emit a
 * handful, so more than this is a runaway model, not a plan. */
export const toolCallsPerTurnMax = 128;

const supportedVersions: readonly string[] = ["v2", "v3", "v4"];

export async function callModel(model: LanguageModel, request: ModelCallRequest): Promise<ModelTurn> {
  assertLanguageModel(model);
  request.signal.throwIfAborted();
  const scope: CallScope = { model: request.overrides?.model ?? model, agentId: request.agentId, executionId: request.executionId };
  let turn: ModelTurn;
  try {
    const ai = await loadAiSdk();
    request.signal.throwIfAborted();
    turn = await answerOf(ai, scope, staticOptionsFor(ai, model, request), request);
  } catch (error) {
    throw modelCallError(scope, request.signal, error);
  }
  request.signal.throwIfAborted();
  return turn;
}

/** Language models found to answer only by streaming: their `doGenerate`
 * threw UnsupportedFunctionalityError once, so every later call streams
 * (weakly held: a model dropped by its definitions is not kept here). */
const streamingOnly = new WeakSet<object>();

/** How a model is called (docs/decisions/0072): streaming when the run
 * streams or the model only streams (no `doGenerate`, or one that said it
 * is unsupported: then again streaming at once); whole when it cannot
 * stream (no `doStream`: a streamed run then gets its text as one delta). */
async function answerOf(ai: AiSdk, scope: CallScope, base: Readonly<Record<string, unknown>>, request: ModelCallRequest): Promise<ModelTurn> {
  const { model } = scope;
  const structured = request.output !== undefined;
  const streamTurnOf = (): Promise<ModelTurn> => streamTurn(ai, scope, callOptionsFor(base, request), request.signal, request.onTextDelta, structured);
  if (typeof model === "object" && typeof model.doStream !== "function") {
    const turn = await generateTurn(ai, scope, base, request);
    if (turn.text.length > 0) deliverDelta(request.onTextDelta, turn.text);
    return turn;
  }
  if (request.onTextDelta !== undefined || streamsOnly(model)) return streamTurnOf();
  try {
    return await generateTurn(ai, scope, base, request);
  } catch (error) {
    if (typeof model === "string" || !isUnsupportedFunctionality(error) || request.signal.aborted) throw error;
    streamingOnly.add(model);
    return streamTurnOf();
  }
}

function streamsOnly(model: LanguageModel): boolean {
  return typeof model === "object" && (typeof model.doGenerate !== "function" || streamingOnly.has(model));
}

/** The AI SDK's UnsupportedFunctionalityError (by name: its class may come
 * from another copy of `@ai-sdk/provider`). */
function isUnsupportedFunctionality(error: unknown): boolean {
  return isRecord(error) && error.name === "AI_UnsupportedFunctionalityError";
}

/** Checks that a value is a language model this package can call: an AI
 * SDK language model object, or a model id when a provider can resolve it. */
export function assertLanguageModel(value: unknown): asserts value is LanguageModel {
  if (typeof value === "string") return assertModelIdResolvable(value);
  if (typeof value !== "object" || value === null) {
    throw new InvalidInputError(`model must be an AI SDK language model (from an @ai-sdk provider) or a model id string, got ${String(value)}`);
  }
  const candidate = value as Partial<Record<keyof LanguageModelObject, unknown>>;
  const version = candidate.specificationVersion;
  if (typeof version !== "string" || !supportedVersions.includes(version)) {
    throw new InvalidInputError(
      `model specification version ${JSON.stringify(version)} is not supported; use a provider package built `
        + "for AI SDK 5 or later (language model v2, v3 or v4)",
      { details: { key: "model", specificationVersion: typeof version === "string" ? version : null } },
    );
  }
  if (typeof candidate.doGenerate !== "function" && typeof candidate.doStream !== "function") {
    throw new InvalidInputError(`model ${labelOf(candidate)} has neither doGenerate nor doStream; it is not an AI SDK language model`);
  }
}

/** A string id goes to the global provider when one is set, else to the AI
 * Gateway, which needs its key (or a Vercel OIDC token): with neither the
 * first call would fail, so the definition is refused now. */
function assertModelIdResolvable(id: string): void {
  if (id.length === 0) throw new InvalidInputError("model: a model id must not be empty");
  const globalProvider = (globalThis as { AI_SDK_DEFAULT_PROVIDER?: unknown }).AI_SDK_DEFAULT_PROVIDER;
  if (globalProvider !== undefined) return;
  if (process.env.AI_GATEWAY_API_KEY || process.env.VERCEL_OIDC_TOKEN) return;
  throw new InvalidInputError(
    `model "${id}" is a model id, but no provider is configured to resolve it: set globalThis.AI_SDK_DEFAULT_PROVIDER `
      + "to a provider (e.g. openai from @ai-sdk/openai), or AI_GATEWAY_API_KEY for the AI Gateway, or pass a model object",
    { details: { key: "model", modelId: id } },
  );
}

// -- calling -----------------------------------------------------------------

type LooseRecord = { readonly [key: string]: unknown };
type CallOptions = Parameters<AiSdk["generateText"]>[0];

/** The model being called and the ids its errors name. */
interface CallScope {
  readonly model: LanguageModel;
  readonly agentId: string | undefined;
  readonly executionId: string | undefined;
}

/** A text-delta listener's exception, carried through the model-error
 * wrapping so that it reaches the caller unchanged. */
class TextDeltaListenerFailure {
  constructor(readonly error: unknown) {}
}

/** What a call passes to the AI SDK beyond its messages, signal and
 * telemetry: the same for every call of a definition (its model,
 * instructions, tools, settings and output), so built once and reused
 * while the request names the same ones (decision 0067). */
interface StaticCallOptions {
  readonly ai: AiSdk;
  readonly model: LanguageModel;
  readonly system: string | undefined;
  readonly tools: readonly ToolSpecification[];
  readonly output: unknown;
  readonly options: Readonly<Record<string, unknown>>;
}

/** By the request's settings object (one per definition: model-settings.ts),
 * or its tools when it has none. */
const staticCallOptions = new WeakMap<object, StaticCallOptions>();

function callOptionsFor(base: Readonly<Record<string, unknown>>, request: ModelCallRequest): CallOptions {
  const { overrides } = request;
  const options: Record<string, unknown> =
    overrides === undefined
      ? { ...base, messages: toModelMessages(request.messages), abortSignal: request.signal }
      : overriddenOptions(base, overrides, request);
  // Telemetry no one listens to is not built (ai-sdk-telemetry.ts), unless
  // the definition set it: the application's setting wins.
  if (base.telemetry === undefined && !aiSdkTelemetryListened()) options.telemetry = telemetryOff;
  return options as CallOptions;
}

function overriddenOptions(base: Readonly<Record<string, unknown>>, overrides: CallOverrides, request: ModelCallRequest): Record<string, unknown> {
  const { messages, model, system, toolChoice, activeTools, providerOptions } = overrides;
  const options: Record<string, unknown> = {
    ...base,
    messages: messages ?? toModelMessages(request.messages),
    abortSignal: request.signal,
  };
  if (model !== undefined) options.model = model;
  if (system !== undefined) options.system = system;
  if (toolChoice !== undefined && base.tools !== undefined) options.toolChoice = toolChoice;
  if (activeTools !== undefined) options.activeTools = activeTools;
  if (providerOptions !== undefined) options.providerOptions = providerOptions;
  return options;
}

function staticOptionsFor(ai: AiSdk, model: LanguageModel, request: ModelCallRequest): Readonly<Record<string, unknown>> {
  const key: object = request.settings ?? request.tools;
  const found = staticCallOptions.get(key);
  if (
    found
    && found.ai === ai
    && found.model === model
    && found.system === request.system
    && found.tools === request.tools
    && found.output === request.output
  ) {
    return found.options;
  }
  const options = Object.freeze({
    ...request.settings,
    model,
    ...(request.system !== undefined && request.system.length > 0 ? { system: request.system } : {}),
    allowSystemInMessages: true,
    maxRetries: 0,
    ...(request.output !== undefined ? { output: request.output } : {}),
    ...(request.tools.length > 0 ? { tools: toolSetFor(ai, request.tools), toolChoice: request.settings?.toolChoice ?? "auto" } : {}),
  });
  staticCallOptions.set(key, { ai, model, system: request.system, tools: request.tools, output: request.output, options });
  return options;
}

/** The tool sets built so far, by the resolved tools they were built
 * from: an agent's tools are resolved once and never change, and every
 * model call of every run asked for the same set again. */
const toolSets = new WeakMap<readonly ToolSpecification[], { readonly ai: AiSdk; readonly set: Record<string, unknown> }>();

/** The agent's tools as AI SDK tools without `execute`: the SDK returns
 * their calls for the loop to run. Inputs are validated by the loop (with
 * the tool's own schema), so the SDK is shown the JSON Schema only. */
function toolSetFor(ai: AiSdk, tools: readonly ToolSpecification[]): Record<string, unknown> {
  const built = toolSets.get(tools);
  if (built !== undefined && built.ai === ai) return built.set;
  const set = buildToolSet(ai, tools);
  toolSets.set(tools, { ai, set });
  return set;
}

function buildToolSet(ai: AiSdk, tools: readonly ToolSpecification[]): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  for (const spec of tools) {
    set[spec.name] = {
      ...(spec.description !== undefined ? { description: spec.description } : {}),
      ...(spec.title !== undefined ? { title: spec.title } : {}),
      ...(spec.strict !== undefined ? { strict: spec.strict } : {}),
      ...(spec.providerOptions !== undefined ? { providerOptions: spec.providerOptions } : {}),
      ...(spec.inputExamples !== undefined ? { inputExamples: spec.inputExamples } : {}),
      inputSchema: ai.jsonSchema(spec.inputJsonSchema as never),
    };
  }
  return set;
}

/** One whole answer: straight to the provider through the AI SDK's own
 * pieces when the definition and this call use nothing of `generateText`'s
 * pipeline (direct-call.ts, decision 0093), else through `generateText`.
 * A telemetry listener needs the pipeline (it builds the spans and
 * events), and so do messages a call sends of its own (`prepareStep`'s:
 * they may carry tool approvals, which the pipeline acts on). */
async function generateTurn(ai: AiSdk, scope: CallScope, base: Readonly<Record<string, unknown>>, request: ModelCallRequest): Promise<ModelTurn> {
  if (request.overrides?.messages === undefined && !aiSdkTelemetryListened()) {
    const plan = await directCallPlan(ai, base);
    if (plan !== null) {
      const step = await directStep(plan, toModelMessages(request.messages) as never, request.signal, request.overrides);
      return turnOf(scope, step.content, step.usage, step.finishReason);
    }
  }
  const result = await ai.generateText(callOptionsFor(base, request));
  const turn = turnOf(scope, result.content as unknown[], result.usage, result.finishReason);
  if (request.output !== undefined && turn.toolCalls.length === 0) return { ...turn, output: outputOf(scope, () => result.output) };
  return turn;
}

/** One model call through `streamText`; each text delta goes to
 * `onTextDelta` when the run streams (otherwise the answer is collected). */
async function streamTurn(
  ai: AiSdk,
  scope: CallScope,
  options: CallOptions,
  signal: AbortSignal,
  onTextDelta: ((delta: string) => void) | undefined,
  structured: boolean,
): Promise<ModelTurn> {
  const result = ai.streamText({ ...options, onError: () => undefined } as Parameters<AiSdk["streamText"]>[0]);
  for await (const part of result.fullStream as AsyncIterable<LooseRecord>) {
    signal.throwIfAborted();
    if (part.type === "text-delta" && typeof part.text === "string" && part.text.length > 0) {
      deliverDelta(onTextDelta, part.text);
    } else if (part.type === "error") {
      throw part.error instanceof Error && !(part.error instanceof PhronomyError) && !isProviderError(part.error)
        ? modelFailure(scope, `streamed an error: ${messageOf(part.error)}`, { cause: part.error })
        : part.error;
    }
  }
  const steps = await result.steps;
  const step = steps[steps.length - 1];
  if (step === undefined) throw modelFailure(scope, "streamed no answer; the provider package may be broken");
  const turn = turnOf(scope, step.content as unknown[], step.usage, step.finishReason);
  if (structured && turn.toolCalls.length === 0) {
    const output = await Promise.resolve(result.output).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    return {
      ...turn,
      output: outputOf(scope, () => {
        if ("error" in output) throw output.error;
        return output.value;
      }),
    };
  }
  return turn;
}

/** A text delta to the run's listener; its exception is carried out of the call as it is. */
function deliverDelta(onTextDelta: ((delta: string) => void) | undefined, delta: string): void {
  if (onTextDelta === undefined) return;
  try {
    onTextDelta(delta);
  } catch (error) {
    throw new TextDeltaListenerFailure(error);
  }
}

/** The structured output, which must be JSON (it is persisted and is the
 * run's result). The AI SDK's parse or validation error is the cause. */
function outputOf(scope: CallScope, read: () => unknown): Json {
  let output: unknown;
  try {
    output = read();
  } catch (error) {
    throw modelFailure(scope, `did not produce the structured output asked for: ${messageOf(error)}`, { cause: error });
  }
  if (output === undefined) return null;
  if (!isJson(output)) throw modelFailure(scope, "produced a structured output that is not JSON-safe");
  return output;
}

/** Turns what a model call threw into what `callModel` throws. */
function modelCallError(scope: CallScope, signal: AbortSignal, error: unknown): unknown {
  if (error instanceof TextDeltaListenerFailure) return error.error;
  if (signal.aborted) return error;
  if (error instanceof PhronomyError) return error;
  const name = isRecord(error) ? error.name : undefined;
  if (name === "AI_NoObjectGeneratedError" || name === "AI_NoOutputGeneratedError") {
    return modelFailure(scope, `did not produce the structured output asked for: ${messageOf(error)}`, { cause: error });
  }
  return modelFailure(scope, `failed: ${messageOf(error)}; check the provider's credentials, limits and request, then retry`, {
    cause: error,
    details: statusDetails(error),
  });
}

/** `execution e1: model "openai/gpt-4o" <problem>`, with the provider,
 * model id and any call facts in the details. */
function modelFailure(
  scope: CallScope,
  problem: string,
  extra: { readonly cause?: unknown; readonly details?: Record<string, unknown> } = {},
): ModelFailedError {
  const { model, agentId, executionId } = scope;
  const where = executionId === undefined ? "" : `execution ${executionId}: `;
  const ids = typeof model === "string" ? { modelId: model } : { provider: model.provider, modelId: model.modelId };
  return new ModelFailedError(`${where}model ${labelOf(model)} ${problem}`, {
    agentId,
    executionId,
    cause: extra.cause,
    details: { ...ids, ...extra.details },
  });
}

function statusDetails(error: unknown): Record<string, unknown> {
  return isRecord(error) && typeof error.statusCode === "number" ? { statusCode: error.statusCode } : {};
}

function isProviderError(error: unknown): boolean {
  return isRecord(error) && typeof error.statusCode === "number";
}

// -- normalizing the answer ----------------------------------------------------

function turnOf(scope: CallScope, content: readonly unknown[], usage: unknown, finishReason: unknown): ModelTurn {
  let text = "";
  const toolCalls: ToolCall[] = [];
  for (const part of content) {
    if (!isRecord(part)) continue;
    if (part.type === "text" && typeof part.text === "string") text += part.text;
    else if (part.type === "tool-call" && part.providerExecuted !== true) addToolCall(scope, toolCalls, part);
  }
  const turn: ModelTurn = { text, toolCalls, usage: usageOf(usage), finishReason: typeof finishReason === "string" ? finishReason : "unknown" };
  return { ...turn, ...responsePartsOf(content) };
}

function addToolCall(scope: CallScope, toolCalls: ToolCall[], part: LooseRecord): void {
  const { toolCallId: callId, toolName } = part;
  if (typeof callId !== "string" || callId.length === 0 || typeof toolName !== "string" || toolName.length === 0) {
    throw modelFailure(scope, "returned a tool call without a call id or tool name");
  }
  if (toolCalls.some((call) => call.callId === callId)) {
    throw modelFailure(scope, `returned two tool calls with call id "${callId}"`, { details: { callId, toolName } });
  }
  if (toolCalls.length === toolCallsPerTurnMax) {
    throw modelFailure(scope, `asked for more than ${toolCallsPerTurnMax} tool calls in one turn; check the instructions and tools for a runaway loop`);
  }
  toolCalls.push({ callId, toolName, input: toolInputOf(scope, callId, toolName, part) });
}

/** The SDK parses tool inputs; a call it marked invalid is a model error,
 * except a call of an unknown tool, which the loop answers with an error
 * result (as it always did). */
function toolInputOf(scope: CallScope, callId: string, toolName: string, part: LooseRecord): Json {
  const unknownTool = isRecord(part.error) && part.error.name === "AI_NoSuchToolError";
  if (part.invalid === true && !unknownTool) {
    throw modelFailure(scope, `sent tool call "${callId}" to tool "${toolName}" with an unusable input: ${messageOf(part.error)}`, {
      cause: part.error,
      details: { callId, toolName },
    });
  }
  const input = part.input;
  if (typeof input === "string") {
    if (input.trim() === "") return {};
    try {
      return JSON.parse(input) as Json;
    } catch {
      return input;
    }
  }
  if (input === undefined) return {};
  if (isJson(input)) return input;
  throw modelFailure(scope, `sent tool call "${callId}" to tool "${toolName}" with an input that is not JSON`, { details: { callId, toolName } });
}

/** The AI SDK's usage, totals and details; a missing number counts 0 in
 * the totals; a missing or zero detail is left out. */
export function usageOf(usage: unknown): ModelUsage {
  const record = isRecord(usage) ? usage : {};
  const inputTokens = count(record.inputTokens) ?? 0;
  const outputTokens = count(record.outputTokens) ?? 0;
  const totals: ModelUsage = { inputTokens, outputTokens, totalTokens: count(record.totalTokens) ?? inputTokens + outputTokens };
  const input = isRecord(record.inputTokenDetails) ? record.inputTokenDetails : {};
  const output = isRecord(record.outputTokenDetails) ? record.outputTokenDetails : {};
  const cacheReadTokens = count(input.cacheReadTokens) ?? count(record.cachedInputTokens);
  const cacheWriteTokens = count(input.cacheWriteTokens);
  const reasoningTokens = count(output.reasoningTokens) ?? count(record.reasoningTokens);
  return {
    ...totals,
    ...(cacheReadTokens ? { cacheReadTokens } : {}),
    ...(cacheWriteTokens ? { cacheWriteTokens } : {}),
    ...(reasoningTokens ? { reasoningTokens } : {}),
  };
}

// -- small helpers -------------------------------------------------------------

function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function labelOf(model: unknown): string {
  if (typeof model === "string") return `"${model}"`;
  const record = isRecord(model) ? model : {};
  return `"${String(record.provider)}/${String(record.modelId)}"`;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (isRecord(error) && typeof error.message === "string") return error.message;
  return String(error);
}

function isRecord(value: unknown): value is LooseRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
