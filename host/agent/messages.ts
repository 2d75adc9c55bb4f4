// The conversation as Phronomy keeps it: the messages an agent loop sends to
// its model and appends to the agent's journal. Every type here is JSON-safe
// (type aliases over `Json`, mutable arrays) because conversations are
// persisted as they are; the provider's own prompt format is produced from
// them in `model.ts` and never stored. Tool calls and results are paired by
// `callId`, which is unique within a conversation.

import type { Json } from "../words.js";

/** One tool call the model asked for. `input` is parsed JSON, not yet
 * validated against the tool's schema. */
export type ToolCall = {
  /** The call's id, unique in the conversation. */
  callId: string;
  /** The tool's name in the agent's tool set. */
  toolName: string;
  /** The arguments the model gave. */
  input: Json;
};

/** What a tool call produced. `isError` marks an output that reports a
 * failure to the model (a thrown tool, an invalid input, a refusal). */
export type ToolResult = {
  /** The call it answers. */
  callId: string;
  /** The tool's name. */
  toolName: string;
  /** The tool's output (JSON), or the error reported to the model. */
  output: Json;
  /** True when `output` reports a failure. */
  isError: boolean;
  /** What the model is shown instead of `output`: the tool's
   * `toModelOutput` (an AI SDK tool-result output), kept with the result. */
  modelOutput?: Json;
};

/** A part of a user message beside its text: an image or a file, as the AI
 * SDK's model messages carry them, made JSON-safe (bytes as base64, URLs as
 * strings) because the conversation is persisted as it is. */
export type UserContentPart =
  | { type: "text"; text: string; providerOptions?: PartProviderOptions }
  | { type: "image"; image: string; mediaType?: string; providerOptions?: PartProviderOptions }
  | { type: "file"; data: string | TaggedFileData; mediaType: string; filename?: string; providerOptions?: PartProviderOptions };

/** A part's provider options (e.g. a cache marker), JSON as the AI SDK takes them. */
export type PartProviderOptions = { [provider: string]: { [key: string]: Json } };

/** File data as the AI SDK 7 tags it (`convertToModelMessages` emits it),
 * kept tagged and JSON-safe: bytes as base64, a URL as its string, a
 * provider's reference (`uploadFile`) as its ids, inline text as text. */
export type TaggedFileData =
  | { type: "data"; data: string }
  | { type: "url"; url: string }
  | { type: "reference"; reference: { [provider: string]: string } }
  | { type: "text"; text: string };

/** The model's reasoning in one turn, with the provider's metadata (a
 * signature some providers need to see again). */
export type ReasoningPart = { text: string; providerOptions?: { [key: string]: Json } };

/** A source the model cited (a web page or a document), as the AI SDK's
 * `source` content part, JSON-safe. */
export type SourcePart =
  | { sourceType: "url"; id: string; url: string; title?: string; providerMetadata?: { [key: string]: Json } }
  | { sourceType: "document"; id: string; mediaType: string; title: string; filename?: string; providerMetadata?: { [key: string]: Json } };

/** A file the model generated (an image, audio): its bytes as base64, or,
 * past `generatedFileBytesMax`, only its size (decision 0073). */
export type GeneratedFilePart = { mediaType: string; data: string } | { mediaType: string; bytes: number; omitted: true };

/** What the parts of one answer are, in the order the model produced
 * them: the k-th `reasoning` is the turn's `reasoning[k]`, the k-th
 * `source` its `sources[k]`, the k-th `file` its `files[k]`; `text` is the
 * answer's text, placed where its first text part came. */
export type ResponsePartKind = "reasoning" | "text" | "source" | "file";

/** Instructions, as the model's system message. */
export type SystemMessage = { role: "system"; content: string };
/** `content` is the message's text (what guardrails, memory and the
 * timeline read); `parts`, when present, is what the model is sent. */
export type UserMessage = { role: "user"; content: string; parts?: UserContentPart[] };
/** What the model answered in one turn: its text, its tool calls, its reasoning. */
export type AssistantMessage = { role: "assistant"; text: string; toolCalls: ToolCall[]; reasoning?: ReasoningPart[] };
/** The results of one tool batch. */
export type ToolMessage = { role: "tool"; results: ToolResult[] };

/** One message of a conversation as Phronomy stores it (JSON-safe). */
export type ConversationMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** Usage of one model call: the totals every execution sums, and the
 * details a provider reported (cached and reasoning tokens). */
export type ModelUsage = {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
};

/** One model call's answer, normalized across provider versions. */
export type ModelTurn = {
  text: string;
  toolCalls: ToolCall[];
  // A type alias (not the store's `UsageTotals` interface), so a whole
  // turn stays assignable to `Json`.
  usage: Readonly<ModelUsage>;
  /** The model's reasoning, when it showed any. */
  reasoning?: ReasoningPart[];
  /** The sources it cited, when any. */
  sources?: SourcePart[];
  /** The files it generated, when any. */
  files?: GeneratedFilePart[];
  /** The order of the parts above and the text, when there is more than
   * text (without it: reasoning first, then the text). */
  partOrder?: ResponsePartKind[];
  /** The structured output (the agent's `output` schema), parsed and
   * validated, on a turn without tool calls. */
  output?: Json;
  /** The provider's unified finish reason: "stop", "tool-calls", "length",
   * "content-filter", "error", "interrupted", "other" or "unknown". */
  finishReason: string;
};

/** The assistant message that records a model turn in the conversation. */
export function assistantMessage(turn: Pick<ModelTurn, "text" | "toolCalls" | "reasoning">): AssistantMessage {
  const message: AssistantMessage = { role: "assistant", text: turn.text, toolCalls: turn.toolCalls.map((call) => ({ ...call })) };
  return turn.reasoning === undefined || turn.reasoning.length === 0 ? message : { ...message, reasoning: turn.reasoning };
}

/** The tool message that answers one batch of tool calls. */
export function toolMessage(results: readonly ToolResult[]): ToolMessage {
  return { role: "tool", results: results.map((result) => ({ ...result })) };
}

/** Checks a message read back from storage (or handed in by a caller). The
 * caller turns `false` into its own error (a store or input error). */
export function isConversationMessage(value: unknown): value is ConversationMessage {
  if (!isRecord(value)) return false;
  switch (value.role) {
    case "system":
    case "user":
      return typeof value.content === "string";
    case "assistant":
      return typeof value.text === "string" && Array.isArray(value.toolCalls) && value.toolCalls.every(isToolCall);
    case "tool":
      return Array.isArray(value.results) && value.results.every(isToolResult);
    default:
      return false;
  }
}

export function isToolCall(value: unknown): value is ToolCall {
  return isRecord(value) && typeof value.callId === "string" && typeof value.toolName === "string" && isJson(value.input);
}

export function isToolResult(value: unknown): value is ToolResult {
  return (
    isRecord(value) && typeof value.callId === "string" && typeof value.toolName === "string" && typeof value.isError === "boolean" && isJson(value.output)
  );
}

/** True for values that survive a JSON round trip unchanged: plain objects,
 * arrays, strings, finite numbers, booleans and null. */
export function isJson(value: unknown): value is Json {
  return isJsonWithin(value, jsonDepthMax);
}

/** How deep `isJson` looks. Persisted conversations are far shallower; the
 * bound keeps a cyclic or hostile value from exhausting the stack. */
export const jsonDepthMax = 256;

function isJsonWithin(value: unknown, depthLeft: number): boolean {
  if (depthLeft === 0) return false;
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((item) => isJsonWithin(item, depthLeft - 1));
  if (!isPlainRecord(value)) return false;
  return Object.values(value).every((item) => isJsonWithin(item, depthLeft - 1));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (!isRecord(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
