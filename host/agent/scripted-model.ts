// A deterministic language model that ships with Phronomy for demos and
// tests. It implements the AI SDK `LanguageModelV4` interface (and v3 on
// request: the shapes it produces are the same), so it goes wherever a real
// provider goes. A script is either a list of turns, served in order to
// whoever calls (running out is an error), or a function of the
// conversation, which lets one instance serve many concurrent executions:
// the answer depends only on the messages, never on call order.
//
// Everything is deterministic: call ids default to `call-<turn>-<index>`,
// usage is about one token per four characters, streamed text arrives in at
// most `streamDeltasMax` deltas. The optional latency and every call honour
// `abortSignal`, rejecting with the signal's reason.

import type {
  LanguageModelV3,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
  LanguageModelV4Usage,
} from "@ai-sdk/provider";
import { InvalidInputError, ModelFailedError } from "../errors.js";
import type { Json, UsageTotals } from "../words.js";
import { isJson, type ConversationMessage } from "./messages.js";
import { promptToConversation } from "./model.js";

/** A tool call a scripted turn makes. */
export interface ScriptedToolCall {
  /** The tool to call, by its name in the agent's tool set. */
  readonly toolName: string;
  /** Its arguments. */
  readonly input: Json;
  /** Defaults to `call-<turn>-<index>`. */
  readonly callId?: string;
}

/** A source a scripted turn cites: a web page (`url`) or a document (`mediaType` and `title`). */
export type ScriptedSource =
  | { readonly url: string; readonly title?: string }
  | { readonly mediaType: string; readonly title: string; readonly filename?: string };

/** A file a scripted turn generates: its media type and bytes as base64. */
export interface ScriptedFile {
  readonly mediaType: string;
  readonly base64: string;
}

/** One answer of the scripted model. Its parts come in this order: the
 * reasoning, the text, the reasoning after the text, the sources, the
 * files, the tool calls — streamed in that order too. */
export interface ScriptedTurn {
  /** The model's reasoning, shown before its text. */
  readonly reasoning?: string;
  /** The answer's text. */
  readonly text?: string;
  /** Reasoning the model shows after some text (streamed after it). */
  readonly reasoningAfterText?: string;
  /** Sources it cites (ids `source-<turn>-<index>`). */
  readonly sources?: readonly ScriptedSource[];
  /** Files it generates. */
  readonly files?: readonly ScriptedFile[];
  /** Tool calls to make (the loop runs them and calls the model again). */
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** Overrides the estimated usage, field by field. */
  readonly usage?: Partial<UsageTotals>;
  /** Defaults to "tool-calls" when there are tool calls, else "stop". */
  readonly finishReason?: LanguageModelV4FinishReason["unified"];
  /** Makes this turn fail like a provider would, with this message. */
  readonly error?: string;
}

/** What a script function is given to answer a call. */
export interface ScriptContext {
  /** The conversation the model was sent, system messages included. */
  readonly messages: ConversationMessage[];
  /** How many assistant messages the conversation already holds: 0 for the
   * first model call of a fresh conversation. */
  readonly turn: number;
}

/** A script that answers from the conversation: one instance can serve
 * many executions at once, in any order. */
export type ScriptFunction = (context: ScriptContext) => ScriptedTurn | PromiseLike<ScriptedTurn>;
/** Turns served in order (running out is an error), or a function of the conversation. */
export type Script = readonly ScriptedTurn[] | ScriptFunction;

/** What `scriptedModel` takes besides its script. */
export interface ScriptedModelOptions {
  /** Delay before each answer, in milliseconds; aborting cuts it short. */
  readonly latencyMs?: number;
  /** The model id it reports (default `scripted`). */
  readonly modelId?: string;
  /** The AI SDK language model interface it implements: `v4` (default) or `v3`. */
  readonly specificationVersion?: "v3" | "v4";
}

/** A scripted model plus what it has done, for assertions. */
export type ScriptedModel<Model extends LanguageModelV3 | LanguageModelV4 = LanguageModelV4> = Model & {
  /** How many turns it has answered (failed and aborted calls excluded). */
  readonly turnsServed: number;
  /** The options of the most recent call, as the provider received them. */
  readonly lastCallOptions: LanguageModelV4CallOptions | undefined;
};

/** At most this many text deltas per streamed turn: enough to exercise a
 * streaming consumer, few enough to keep test logs readable. */
export const streamDeltasMax = 4;
/** A simulated latency above this is a mistake (a test would time out). */
export const scriptedLatencyMsMax = 60_000;
/** Characters per estimated token, the usual rule of thumb for English. */
const charactersPerToken = 4;

const turnKeys = ["reasoning", "text", "reasoningAfterText", "sources", "files", "toolCalls", "usage", "finishReason", "error"];
const toolCallKeys = ["toolName", "input", "callId"];
const usageKeys = ["inputTokens", "outputTokens", "totalTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens"];
const finishReasons: readonly string[] = ["stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"];
const optionKeys = ["latencyMs", "modelId", "specificationVersion"];

/** A deterministic AI SDK language model (v4) answering from `script`:
 * no key, no network; for tests and demos. */
export function scriptedModel(script: Script, options?: ScriptedModelOptions & { specificationVersion?: "v4" }): ScriptedModel<LanguageModelV4>;
/** The same, implementing the AI SDK's language model v3. */
export function scriptedModel(script: Script, options: ScriptedModelOptions & { specificationVersion: "v3" }): ScriptedModel<LanguageModelV3>;
export function scriptedModel(script: Script, options: ScriptedModelOptions = {}): ScriptedModel<LanguageModelV3 | LanguageModelV4> {
  checkOptions(options);
  if (typeof script !== "function") {
    if (!Array.isArray(script)) throw new InvalidInputError("scriptedModel(script): script must be an array of turns or a function");
    script.forEach((turn, index) => checkTurn(turn, `script[${index}]`));
  }
  const state: ScriptState = { turnsTaken: 0, turnsServed: 0, lastCallOptions: undefined as LanguageModelV4CallOptions | undefined };
  const answer = (callOptions: LanguageModelV4CallOptions) => answerCall(script, options, state, callOptions);
  const model = {
    specificationVersion: options.specificationVersion ?? "v4",
    provider: "phronomy.scripted",
    modelId: options.modelId ?? "scripted",
    supportedUrls: {},
    get turnsServed() {
      return state.turnsServed;
    },
    get lastCallOptions() {
      return state.lastCallOptions;
    },
    async doGenerate(callOptions: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
      const answered = await answer(callOptions);
      return { content: answered.content, finishReason: answered.finishReason, usage: answered.usage, warnings: [] };
    },
    async doStream(callOptions: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
      const answered = await answer(callOptions);
      return { stream: partStream(streamPartsOf(answered), callOptions.abortSignal) };
    },
  } satisfies Omit<LanguageModelV4, "specificationVersion"> & { specificationVersion: "v3" | "v4" } & Pick<ScriptedModel, "turnsServed" | "lastCallOptions">;
  // The parts produced (text, tool calls, `{ unified, raw }` finish reasons,
  // `{ total }` usage) are valid v3 as well, which the v4 types cannot show.
  return model as ScriptedModel<LanguageModelV3 | LanguageModelV4>;
}

// -- answering -------------------------------------------------------------------

interface Answer {
  readonly turn: number;
  readonly content: LanguageModelV4Content[];
  readonly finishReason: LanguageModelV4FinishReason;
  readonly usage: LanguageModelV4Usage;
}

interface ScriptState {
  /** Turns of a list script handed out, including ones scripted to fail. */
  turnsTaken: number;
  turnsServed: number;
  lastCallOptions: LanguageModelV4CallOptions | undefined;
}

async function answerCall(script: Script, options: ScriptedModelOptions, state: ScriptState, callOptions: LanguageModelV4CallOptions): Promise<Answer> {
  const signal = callOptions.abortSignal;
  signal?.throwIfAborted();
  state.lastCallOptions = callOptions;
  if (options.latencyMs !== undefined && options.latencyMs > 0) await delay(options.latencyMs, signal);
  const messages = promptToConversation(callOptions.prompt);
  const { turn, scripted } = typeof script === "function" ? await turnFromFunction(script, messages) : turnFromList(script, state);
  signal?.throwIfAborted();
  if (scripted.error !== undefined) throw new Error(scripted.error);
  state.turnsServed += 1;
  return answerOf(turn, scripted, messages);
}

/** A list is consumed in order at delivery time (after the latency), so a
 * call aborted while waiting does not use up a turn. The index is claimed
 * synchronously, so concurrent calls never get the same turn. */
function turnFromList(script: readonly ScriptedTurn[], state: ScriptState): { turn: number; scripted: ScriptedTurn } {
  const turn = state.turnsTaken;
  const scripted = script[turn];
  if (scripted === undefined) {
    throw new ModelFailedError(
      `scripted model ran out of turns: the script has ${script.length} and turn ${turn + 1} was requested; `
        + "add turns to the script, or script with a function of the conversation",
      { details: { turnsInScript: script.length, turnRequested: turn + 1 } },
    );
  }
  state.turnsTaken += 1;
  return { turn, scripted };
}

/** The turn number is read from the conversation, not from call order. */
async function turnFromFunction(script: ScriptFunction, messages: ConversationMessage[]): Promise<{ turn: number; scripted: ScriptedTurn }> {
  const turn = messages.filter((message) => message.role === "assistant").length;
  const scripted: unknown = await script({ messages, turn });
  checkTurn(scripted, `script({ turn: ${turn} })`);
  return { turn, scripted };
}

function answerOf(turn: number, scripted: ScriptedTurn, messages: ConversationMessage[]): Answer {
  const text = scripted.text ?? "";
  const content = partsOf(turn, scripted);
  const toolCalls = (scripted.toolCalls ?? []).map((call, index) => ({
    type: "tool-call" as const,
    toolCallId: call.callId ?? `call-${turn}-${index}`,
    toolName: call.toolName,
    input: JSON.stringify(call.input),
  }));
  content.push(...toolCalls);
  const unified = scripted.finishReason ?? (toolCalls.length > 0 ? "tool-calls" : "stop");
  const reasoningCharacters = (scripted.reasoning ?? "").length + (scripted.reasoningAfterText ?? "").length;
  const outputCharacters = text.length + reasoningCharacters + toolCalls.reduce((sum, call) => sum + call.toolName.length + call.input.length, 0);
  const usage = usageOf(scripted.usage, tokensOf(JSON.stringify(messages).length), tokensOf(outputCharacters), tokensOf(reasoningCharacters));
  return { turn, content, finishReason: { unified, raw: unified }, usage };
}

/** The turn's parts before its tool calls, in the order `ScriptedTurn` documents. */
function partsOf(turn: number, scripted: ScriptedTurn): LanguageModelV4Content[] {
  const content: LanguageModelV4Content[] = [];
  if (scripted.reasoning) content.push({ type: "reasoning", text: scripted.reasoning });
  if (scripted.text) content.push({ type: "text", text: scripted.text });
  if (scripted.reasoningAfterText) content.push({ type: "reasoning", text: scripted.reasoningAfterText });
  (scripted.sources ?? []).forEach((source, index) => {
    const id = `source-${turn}-${index}`;
    content.push(
      "url" in source
        ? { type: "source", sourceType: "url", id, url: source.url, ...(source.title !== undefined ? { title: source.title } : {}) }
        : {
            type: "source",
            sourceType: "document",
            id,
            mediaType: source.mediaType,
            title: source.title,
            ...(source.filename !== undefined ? { filename: source.filename } : {}),
          },
    );
  });
  for (const file of scripted.files ?? []) content.push({ type: "file", mediaType: file.mediaType, data: { type: "data", data: file.base64 } });
  return content;
}

function usageOf(override: Partial<UsageTotals> | undefined, inputEstimate: number, outputEstimate: number, reasoningEstimate: number): LanguageModelV4Usage {
  const inputTokens = override?.inputTokens ?? inputEstimate;
  const outputTokens = override?.outputTokens ?? outputEstimate;
  const totalTokens = override?.totalTokens ?? inputTokens + outputTokens;
  const cacheRead = override?.cacheReadTokens ?? 0;
  const cacheWrite = override?.cacheWriteTokens ?? 0;
  const reasoning = override?.reasoningTokens ?? reasoningEstimate;
  return {
    inputTokens: { total: inputTokens, noCache: Math.max(0, inputTokens - cacheRead - cacheWrite), cacheRead, cacheWrite },
    outputTokens: { total: outputTokens, text: Math.max(0, outputTokens - reasoning), reasoning },
    raw: { inputTokens, outputTokens, totalTokens },
  };
}

function tokensOf(characters: number): number {
  return Math.ceil(characters / charactersPerToken);
}

// -- streaming ---------------------------------------------------------------------

function streamPartsOf(answer: Answer): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = [{ type: "stream-start", warnings: [] }];
  for (const [index, part] of answer.content.entries()) {
    if (part.type === "text") {
      const id = `text-${answer.turn}-${index}`;
      parts.push({ type: "text-start", id });
      for (const delta of textDeltas(part.text)) parts.push({ type: "text-delta", id, delta });
      parts.push({ type: "text-end", id });
    } else if (part.type === "reasoning") {
      const id = `reasoning-${answer.turn}-${index}`;
      parts.push({ type: "reasoning-start", id });
      for (const delta of textDeltas(part.text)) parts.push({ type: "reasoning-delta", id, delta });
      parts.push({ type: "reasoning-end", id });
    } else {
      parts.push(part as LanguageModelV4StreamPart);
    }
  }
  parts.push({ type: "finish", usage: answer.usage, finishReason: answer.finishReason });
  return parts;
}

/** Splits text at word boundaries into at most `streamDeltasMax` pieces
 * that join back to the original exactly. */
export function textDeltas(text: string): string[] {
  const words = text.match(/\s*\S+\s*|\s+/g) ?? [];
  const groups = Math.min(streamDeltasMax, words.length);
  const deltas: string[] = [];
  for (let group = 0; group < groups; group += 1) {
    const start = Math.floor((group * words.length) / groups);
    const end = Math.floor(((group + 1) * words.length) / groups);
    deltas.push(words.slice(start, end).join(""));
  }
  return deltas;
}

/** Hands out one part per read; an abort errors the stream with the
 * signal's reason at the next read. */
function partStream(parts: LanguageModelV4StreamPart[], signal: AbortSignal | undefined): ReadableStream<LanguageModelV4StreamPart> {
  let next = 0;
  return new ReadableStream<LanguageModelV4StreamPart>(
    {
      pull(controller) {
        if (signal?.aborted) {
          controller.error(signal.reason);
          return;
        }
        const part = parts[next];
        next += 1;
        if (part === undefined) controller.close();
        else controller.enqueue(part);
      },
    },
    { highWaterMark: 0 },
  );
}

// -- checks and timing ------------------------------------------------------------

function checkOptions(options: ScriptedModelOptions): void {
  const unknownKey = Object.keys(options).find((key) => !optionKeys.includes(key));
  if (unknownKey !== undefined) {
    throw new InvalidInputError(`scriptedModel(): "${unknownKey}" is not an option; the options are ${optionKeys.join(", ")}`, {
      details: { key: unknownKey },
    });
  }
  const { latencyMs, specificationVersion } = options;
  if (latencyMs !== undefined && (!Number.isFinite(latencyMs) || latencyMs < 0 || latencyMs > scriptedLatencyMsMax)) {
    throw new InvalidInputError(`scriptedModel(): "latencyMs" must be between 0 and ${scriptedLatencyMsMax}`, {
      details: { key: "latencyMs" },
    });
  }
  if (specificationVersion !== undefined && specificationVersion !== "v3" && specificationVersion !== "v4") {
    throw new InvalidInputError('scriptedModel(): "specificationVersion" must be "v3" or "v4"', {
      details: { key: "specificationVersion" },
    });
  }
}

function checkTurn(turn: unknown, where: string): asserts turn is ScriptedTurn {
  if (typeof turn !== "object" || turn === null || Array.isArray(turn)) throw invalidTurn(where, "must be a turn object");
  const record = turn as Record<string, unknown>;
  const unknownKey = Object.keys(record).find((key) => !turnKeys.includes(key));
  if (unknownKey !== undefined) throw invalidTurn(where, `has an unknown key "${unknownKey}" (keys: ${turnKeys.join(", ")})`);
  for (const key of ["text", "reasoning", "reasoningAfterText"]) {
    if (record[key] !== undefined && typeof record[key] !== "string") throw invalidTurn(`${where}.${key}`, "must be a string");
  }
  checkList(record.sources, `${where}.sources`, checkSource);
  checkList(record.files, `${where}.files`, checkFile);
  if (record.error !== undefined && typeof record.error !== "string") throw invalidTurn(`${where}.error`, "must be a string");
  if (record.finishReason !== undefined && !finishReasons.includes(record.finishReason as string)) {
    throw invalidTurn(`${where}.finishReason`, `must be one of ${finishReasons.join(", ")}`);
  }
  if (record.usage !== undefined) checkUsage(record.usage, `${where}.usage`);
  if (record.toolCalls === undefined) return;
  if (!Array.isArray(record.toolCalls)) throw invalidTurn(`${where}.toolCalls`, "must be an array");
  const callIds = new Set<string>();
  record.toolCalls.forEach((call: unknown, index: number) => checkToolCall(call, `${where}.toolCalls[${index}]`, callIds));
}

function checkList(list: unknown, where: string, check: (item: Record<string, unknown>, where: string) => void): void {
  if (list === undefined) return;
  if (!Array.isArray(list)) throw invalidTurn(where, "must be an array");
  list.forEach((item: unknown, index) => {
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw invalidTurn(`${where}[${index}]`, "must be an object");
    check(item as Record<string, unknown>, `${where}[${index}]`);
  });
}

function checkSource(source: Record<string, unknown>, where: string): void {
  if (typeof source.url === "string" && (source.title === undefined || typeof source.title === "string")) return;
  if (typeof source.mediaType === "string" && typeof source.title === "string" && (source.filename === undefined || typeof source.filename === "string"))
    return;
  throw invalidTurn(where, "must be { url, title? } or { mediaType, title, filename? }");
}

function checkFile(file: Record<string, unknown>, where: string): void {
  if (typeof file.mediaType !== "string" || typeof file.base64 !== "string") throw invalidTurn(where, "must be { mediaType, base64 } with strings");
}

function checkUsage(usage: unknown, where: string): void {
  if (typeof usage !== "object" || usage === null || Array.isArray(usage)) throw invalidTurn(where, "must be an object");
  for (const [key, value] of Object.entries(usage)) {
    if (!usageKeys.includes(key)) throw invalidTurn(where, `has an unknown key "${key}" (keys: ${usageKeys.join(", ")})`);
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
      throw invalidTurn(`${where}.${key}`, "must be a non-negative integer");
    }
  }
}

function checkToolCall(call: unknown, where: string, callIds: Set<string>): void {
  if (typeof call !== "object" || call === null || Array.isArray(call)) throw invalidTurn(where, "must be a tool call object");
  const record = call as Record<string, unknown>;
  const unknownKey = Object.keys(record).find((key) => !toolCallKeys.includes(key));
  if (unknownKey !== undefined) throw invalidTurn(where, `has an unknown key "${unknownKey}" (keys: ${toolCallKeys.join(", ")})`);
  if (typeof record.toolName !== "string" || record.toolName.length === 0) throw invalidTurn(`${where}.toolName`, "must be a tool name");
  if (!isJson(record.input)) throw invalidTurn(`${where}.input`, "must be JSON");
  if (record.callId === undefined) return;
  if (typeof record.callId !== "string" || record.callId.length === 0) throw invalidTurn(`${where}.callId`, "must be a non-empty string");
  if (callIds.has(record.callId)) throw invalidTurn(`${where}.callId`, `repeats "${record.callId}" within the turn`);
  callIds.add(record.callId);
}

function invalidTurn(where: string, problem: string): InvalidInputError {
  return new InvalidInputError(`scriptedModel: ${where} ${problem}`, { details: { key: where } });
}

/** Waits `milliseconds` unless the signal fires first, then rejects with its
 * reason (not a generic AbortError), as AI SDK providers do. */
function delay(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, milliseconds);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
