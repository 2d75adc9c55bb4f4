// One model call for the agent loop, through the Vercel AI SDK provider
// interface (`@ai-sdk/provider` language models, specification v2, v3 and
// v4), so any AI SDK provider works. `callModel` turns the stored
// conversation into the provider prompt, calls `doGenerate` (or `doStream`
// when the caller wants text deltas), and normalizes the answer into a
// `ModelTurn`: text parts joined, tool-call inputs parsed from their JSON
// strings, usage summed into `UsageTotals`, the finish reason as a string.
// The three versions share the prompt and content shapes used here; they
// differ in usage (flat numbers in v2, `{ total }` records in v3/v4) and
// finish reason (a string in v2, `{ unified, raw }` in v3/v4), handled below.
//
// Errors: an abort (the caller's signal fired) is rethrown as it is, so the
// loop can tell cancellation and timeout apart by the signal's reason; a
// Phronomy error is rethrown as it is; anything else the model throws or
// returns wrong becomes a `ModelFailedError` (code MODEL_FAILED) with the
// provider's error as `cause`. A call whose signal fired never yields a
// turn, even when the model ignored the signal and answered anyway.

import type {
  LanguageModelV2, LanguageModelV2Prompt, LanguageModelV3, LanguageModelV3Prompt, LanguageModelV4,
  LanguageModelV4CallOptions, LanguageModelV4FunctionTool, LanguageModelV4Message, LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
} from "@ai-sdk/provider";
import { InvalidInputError, ModelFailedError, PhronomyError } from "../errors.js";
import type { Json, UsageTotals } from "../store/records.js";
import { isJson, type ConversationMessage, type ModelTurn, type ToolCall, type ToolResult } from "./messages.js";
import type { ToolSpecification } from "./tools.js";

/** Any AI SDK language model this package accepts. Typed by shape so that a
 * model built against another release of `@ai-sdk/provider` still fits:
 * every `LanguageModelV2`, `LanguageModelV3` and `LanguageModelV4` does. */
export interface LanguageModel {
  readonly specificationVersion: "v2" | "v3" | "v4";
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: never): PromiseLike<unknown>;
  doStream(options: never): PromiseLike<unknown>;
}

/** The provider types `LanguageModel` stands for, for documentation. */
export type ProviderLanguageModel = LanguageModelV2 | LanguageModelV3 | LanguageModelV4;

/** Provider settings passed through unchanged. */
export type ModelCallSettings = Pick<
  LanguageModelV4CallOptions,
  "maxOutputTokens" | "temperature" | "topP" | "topK" | "seed" | "stopSequences" | "headers" | "providerOptions"
>;

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
  readonly settings?: ModelCallSettings;
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
  const options = callOptionsFor(request);
  const scope: CallScope = { model, agentId: request.agentId, executionId: request.executionId };
  let turn: ModelTurn;
  try {
    turn = request.onTextDelta !== undefined && typeof model.doStream === "function"
      ? await streamTurn(scope, options, request.signal, request.onTextDelta)
      : await generateTurn(scope, options);
  } catch (error) {
    throw modelCallError(scope, request.signal, error);
  }
  request.signal.throwIfAborted();
  return turn;
}

/** Checks that a value is a language model this package can call. */
export function assertLanguageModel(value: unknown): asserts value is LanguageModel {
  if (typeof value !== "object" || value === null) {
    throw new InvalidInputError(`model must be an AI SDK language model (from an @ai-sdk provider), got ${String(value)}`);
  }
  const candidate = value as Partial<Record<keyof LanguageModel, unknown>>;
  const version = candidate.specificationVersion;
  if (typeof version !== "string" || !supportedVersions.includes(version)) {
    throw new InvalidInputError(
      `model specification version ${JSON.stringify(version)} is not supported; use a provider package built ` +
        "for AI SDK 5 or later (language model v2, v3 or v4)",
      { details: { key: "model", specificationVersion: typeof version === "string" ? version : null } },
    );
  }
  if (typeof candidate.doGenerate !== "function") {
    throw new InvalidInputError(`model ${labelOf(candidate)} has no doGenerate method; it is not an AI SDK language model`);
  }
}

/** The provider prompt for a conversation (v4 shapes, which v2 and v3 share
 * for text, tool-call and tool-result parts). Assistant messages with
 * neither text nor tool calls are left out: providers reject empty content. */
export function conversationToPrompt(system: string | undefined, messages: readonly ConversationMessage[]): LanguageModelV4Prompt {
  const prompt: LanguageModelV4Prompt = [];
  if (system !== undefined && system.length > 0) prompt.push({ role: "system", content: system });
  for (const message of messages) {
    const converted = promptMessageOf(message);
    if (converted !== undefined) prompt.push(converted);
  }
  return prompt;
}

/** The conversation a provider prompt carries: the inverse of
 * `conversationToPrompt`, used by the scripted model to hand its script
 * the messages in Phronomy's own format. Parts with no conversation
 * counterpart (files, reasoning, approvals) are dropped. */
export function promptToConversation(
  prompt: LanguageModelV4Prompt | LanguageModelV3Prompt | LanguageModelV2Prompt,
): ConversationMessage[] {
  const messages: ConversationMessage[] = [];
  for (const message of prompt as readonly LooseRecord[]) {
    const converted = conversationMessageOf(message);
    if (converted !== undefined) messages.push(converted);
  }
  return messages;
}

/** The function tools of a call, in the order given. */
export function toolsToProvider(tools: readonly ToolSpecification[]): LanguageModelV4FunctionTool[] {
  return tools.map((tool) => {
    const providerTool: LanguageModelV4FunctionTool = { type: "function", name: tool.name, inputSchema: tool.inputJsonSchema };
    return tool.description === undefined ? providerTool : { ...providerTool, description: tool.description };
  });
}

/** Usage of any version as totals; a missing or unusable number counts 0.
 * v2 reports flat numbers, v3/v4 `{ inputTokens: { total }, … }`. */
export function usageToTotals(usage: unknown): UsageTotals {
  if (!isRecord(usage)) return { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  const inputTokens = tokenCount(usage.inputTokens);
  const outputTokens = tokenCount(usage.outputTokens);
  const reportedTotal = typeof usage.totalTokens === "number" ? tokenCount(usage.totalTokens) : undefined;
  return { inputTokens, outputTokens, totalTokens: reportedTotal ?? inputTokens + outputTokens };
}

/** The unified finish reason: v2's string or v3/v4's `unified` field. */
export function finishReasonOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (isRecord(value) && typeof value.unified === "string") return value.unified;
  return "unknown";
}

// -- calling -----------------------------------------------------------------

type LooseRecord = { readonly [key: string]: unknown };

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

function callOptionsFor(request: ModelCallRequest): LanguageModelV4CallOptions {
  const options: LanguageModelV4CallOptions = {
    ...request.settings,
    prompt: conversationToPrompt(request.system, request.messages),
    abortSignal: request.signal,
  };
  if (request.tools.length === 0) return options;
  return { ...options, tools: toolsToProvider(request.tools), toolChoice: { type: "auto" } };
}

async function generateTurn(scope: CallScope, options: LanguageModelV4CallOptions): Promise<ModelTurn> {
  const result: unknown = await scope.model.doGenerate(options as never);
  if (!isRecord(result) || !Array.isArray(result.content)) {
    throw modelFailure(scope, "returned a result without a content array; the provider package may be broken");
  }
  const assembly = emptyAssembly();
  for (const part of result.content as unknown[]) addContentPart(scope, assembly, part);
  assembly.usage = result.usage;
  assembly.finishReason = result.finishReason;
  return finishAssembly(assembly);
}

async function streamTurn(
  scope: CallScope,
  options: LanguageModelV4CallOptions,
  signal: AbortSignal,
  onTextDelta: (delta: string) => void,
): Promise<ModelTurn> {
  const result: unknown = await scope.model.doStream(options as never);
  // Checked by shape: a provider may bring its own web-streams implementation.
  const stream = isRecord(result) ? result.stream : undefined;
  if (!isRecord(stream) || typeof stream.getReader !== "function") {
    throw modelFailure(scope, "returned a stream result without a readable stream; the provider package may be broken");
  }
  const reader = (stream as unknown as ReadableStream<unknown>).getReader();
  const assembly = emptyAssembly();
  // A stream that ends without a finish part was cut off.
  assembly.finishReason = "interrupted";
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      signal.throwIfAborted();
      addStreamPart(scope, assembly, next.value, onTextDelta);
    }
  } catch (error) {
    reader.cancel(error).catch(() => undefined);
    throw error;
  }
  reader.releaseLock();
  return finishAssembly(assembly);
}

/** Turns what a model call threw into what `callModel` throws. */
function modelCallError(scope: CallScope, signal: AbortSignal, error: unknown): unknown {
  if (error instanceof TextDeltaListenerFailure) return error.error;
  if (signal.aborted) return error;
  if (error instanceof PhronomyError) return error;
  return modelFailure(scope, `failed: ${messageOf(error)}; check the provider's credentials, limits and request, then retry`, {
    cause: error,
  });
}

/** `execution e1: model "openai/gpt-4o" <problem>`, with the provider,
 * model id and any call facts in the details. */
function modelFailure(
  scope: CallScope, problem: string, extra: { readonly cause?: unknown; readonly details?: Record<string, unknown> } = {},
): ModelFailedError {
  const { model, agentId, executionId } = scope;
  const where = executionId === undefined ? "" : `execution ${executionId}: `;
  return new ModelFailedError(`${where}model ${labelOf(model)} ${problem}`, {
    agentId, executionId, cause: extra.cause,
    details: { provider: model.provider, modelId: model.modelId, ...extra.details },
  });
}

// -- normalizing the answer ----------------------------------------------------

interface TurnAssembly {
  text: string;
  toolCalls: ToolCall[];
  usage: unknown;
  finishReason: unknown;
}

function emptyAssembly(): TurnAssembly {
  return { text: "", toolCalls: [], usage: undefined, finishReason: undefined };
}

/** Content parts of a generate result. Reasoning, files, sources and
 * provider-executed tool calls and results are not part of a turn. */
function addContentPart(scope: CallScope, assembly: TurnAssembly, part: unknown): void {
  if (!isRecord(part)) return;
  if (part.type === "text" && typeof part.text === "string") assembly.text += part.text;
  else if (part.type === "tool-call" && part.providerExecuted !== true) addToolCall(scope, assembly, part);
}

function addStreamPart(
  scope: CallScope, assembly: TurnAssembly, part: unknown, onTextDelta: (delta: string) => void,
): void {
  if (!isRecord(part)) return;
  switch (part.type) {
    case "text-delta":
      if (typeof part.delta === "string" && part.delta.length > 0) addTextDelta(assembly, part.delta, onTextDelta);
      return;
    case "tool-call":
      if (part.providerExecuted !== true) addToolCall(scope, assembly, part);
      return;
    case "finish":
      assembly.usage = part.usage;
      assembly.finishReason = part.finishReason;
      return;
    case "error":
      throw modelFailure(scope, `streamed an error: ${messageOf(part.error)}`, { cause: part.error });
    default:
      return;
  }
}

function addTextDelta(assembly: TurnAssembly, delta: string, onTextDelta: (delta: string) => void): void {
  assembly.text += delta;
  try {
    onTextDelta(delta);
  } catch (error) {
    throw new TextDeltaListenerFailure(error);
  }
}

function addToolCall(scope: CallScope, assembly: TurnAssembly, part: LooseRecord): void {
  const { toolCallId: callId, toolName } = part;
  if (typeof callId !== "string" || callId.length === 0 || typeof toolName !== "string" || toolName.length === 0) {
    throw modelFailure(scope, "returned a tool call without a call id or tool name");
  }
  if (assembly.toolCalls.some((call) => call.callId === callId)) {
    throw modelFailure(scope, `returned two tool calls with call id "${callId}"`, { details: { callId, toolName } });
  }
  if (assembly.toolCalls.length === toolCallsPerTurnMax) {
    throw modelFailure(scope,
      `asked for more than ${toolCallsPerTurnMax} tool calls in one turn; check the instructions and tools for a runaway loop`);
  }
  assembly.toolCalls.push({ callId, toolName, input: toolInputOf(scope, callId, toolName, part.input) });
}

/** Providers send tool inputs as JSON text ("" for a tool without
 * parameters, as the AI SDK itself reads it); an already-parsed JSON value
 * is accepted too. */
function toolInputOf(scope: CallScope, callId: string, toolName: string, input: unknown): Json {
  if (typeof input !== "string") {
    if (isJson(input)) return input;
    throw invalidToolCallInput(scope, callId, toolName, "it is neither JSON text nor a JSON value", undefined);
  }
  if (input.trim() === "") return {};
  try {
    return JSON.parse(input) as Json;
  } catch (error) {
    throw invalidToolCallInput(scope, callId, toolName, `it is not valid JSON (${messageOf(error)})`, error);
  }
}

function invalidToolCallInput(
  scope: CallScope, callId: string, toolName: string, problem: string, cause: unknown,
): ModelFailedError {
  return modelFailure(scope, `sent tool call "${callId}" to tool "${toolName}" with an unusable input: ${problem}`, {
    cause, details: { callId, toolName },
  });
}

function finishAssembly(assembly: TurnAssembly): ModelTurn {
  return {
    text: assembly.text,
    toolCalls: assembly.toolCalls,
    usage: usageToTotals(assembly.usage),
    finishReason: finishReasonOf(assembly.finishReason),
  };
}

// -- conversation ⇄ prompt ---------------------------------------------------

function promptMessageOf(message: ConversationMessage): LanguageModelV4Message | undefined {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content };
    case "user":
      return { role: "user", content: [{ type: "text", text: message.content }] };
    case "assistant":
      return assistantPromptMessage(message.text, message.toolCalls);
    case "tool":
      if (message.results.length === 0) return undefined;
      return { role: "tool", content: message.results.map(toolResultPart) };
  }
}

function assistantPromptMessage(text: string, toolCalls: readonly ToolCall[]): LanguageModelV4Message | undefined {
  const content: Extract<LanguageModelV4Message, { role: "assistant" }>["content"] = [];
  if (text.length > 0) content.push({ type: "text", text });
  for (const call of toolCalls) {
    content.push({ type: "tool-call", toolCallId: call.callId, toolName: call.toolName, input: call.input });
  }
  return content.length === 0 ? undefined : { role: "assistant", content };
}

/** Strings go as text (the model reads them unquoted), everything else as
 * JSON; failures use the error variants so the model sees them as errors. */
function toolResultPart(result: ToolResult): Extract<LanguageModelV4Message, { role: "tool" }>["content"][number] {
  const output: LanguageModelV4ToolResultOutput = typeof result.output === "string"
    ? { type: result.isError ? "error-text" : "text", value: result.output }
    : { type: result.isError ? "error-json" : "json", value: result.output };
  return { type: "tool-result", toolCallId: result.callId, toolName: result.toolName, output };
}

function conversationMessageOf(message: LooseRecord): ConversationMessage | undefined {
  const parts = Array.isArray(message.content) ? (message.content as unknown[]).filter(isRecord) : [];
  switch (message.role) {
    case "system":
      return { role: "system", content: typeof message.content === "string" ? message.content : "" };
    case "user":
      return { role: "user", content: textOfParts(parts) };
    case "assistant":
      return { role: "assistant", text: textOfParts(parts), toolCalls: parts.filter(isToolCallPart).map(toolCallOfPart) };
    case "tool":
      return { role: "tool", results: parts.filter((part) => part.type === "tool-result").map(toolResultOfPart) };
    default:
      return undefined;
  }
}

function textOfParts(parts: readonly LooseRecord[]): string {
  return parts.map((part) => (part.type === "text" && typeof part.text === "string" ? part.text : "")).join("");
}

function isToolCallPart(part: LooseRecord): boolean {
  return part.type === "tool-call";
}

function toolCallOfPart(part: LooseRecord): ToolCall {
  return { callId: String(part.toolCallId), toolName: String(part.toolName), input: isJson(part.input) ? part.input : null };
}

function toolResultOfPart(part: LooseRecord): ToolResult {
  const output = isRecord(part.output) ? part.output : {};
  const isError = output.type === "error-text" || output.type === "error-json" || output.type === "execution-denied";
  const value = output.type === "execution-denied"
    ? { denied: true, reason: typeof output.reason === "string" ? output.reason : null }
    : output.type === "content" ? textOfParts(Array.isArray(output.value) ? output.value.filter(isRecord) : [])
    : isJson(output.value) ? output.value : null;
  return { callId: String(part.toolCallId), toolName: String(part.toolName), output: value, isError };
}

// -- small helpers -------------------------------------------------------------

function tokenCount(value: unknown): number {
  if (isRecord(value)) return tokenCount(value.total);
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}

function labelOf(model: Partial<Record<"provider" | "modelId", unknown>>): string {
  return `"${String(model.provider)}/${String(model.modelId)}"`;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (isRecord(error) && typeof error.message === "string") return error.message;
  return String(error);
}

function isRecord(value: unknown): value is LooseRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
