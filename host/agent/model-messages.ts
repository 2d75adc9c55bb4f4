// The conversation as AI SDK model messages (`ModelMessage` of the `ai`
// package), what `generateText`/`streamText` take and what a tool's
// `execute` is handed as `messages`; and the other way, AI SDK model
// messages given as an execution's input turned into conversation messages
// that can be persisted (bytes become base64, URLs strings).

import type { ModelMessage } from "ai";
import { InvalidInputError } from "../errors.js";
import type { Json } from "../words.js";
import {
  isJson,
  type ConversationMessage,
  type PartProviderOptions,
  type ReasoningPart,
  type TaggedFileData,
  type ToolResult,
  type UserContentPart,
  type UserMessage,
} from "./messages.js";

type LooseRecord = { readonly [key: string]: unknown };

/** The conversation as the AI SDK's model messages. Assistant messages with
 * nothing in them are left out: providers reject empty content. */
export function toModelMessages(messages: readonly ConversationMessage[]): ModelMessage[] {
  const converted: ModelMessage[] = [];
  for (const message of messages) {
    const modelMessage = modelMessageOf(message);
    if (modelMessage !== undefined) converted.push(modelMessage);
  }
  return converted;
}

function modelMessageOf(message: ConversationMessage): ModelMessage | undefined {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content };
    case "user":
      return { role: "user", content: message.parts === undefined ? message.content : message.parts.map(userPartOf) };
    case "assistant": {
      const content: Exclude<Extract<ModelMessage, { role: "assistant" }>["content"], string> = [];
      for (const part of message.reasoning ?? []) {
        content.push({ type: "reasoning", text: part.text, ...(part.providerOptions ? { providerOptions: part.providerOptions as never } : {}) });
      }
      if (message.text.length > 0) content.push({ type: "text", text: message.text });
      for (const call of message.toolCalls) {
        content.push({ type: "tool-call", toolCallId: call.callId, toolName: call.toolName, input: call.input });
      }
      return content.length === 0 ? undefined : { role: "assistant", content };
    }
    case "tool":
      if (message.results.length === 0) return undefined;
      return { role: "tool", content: message.results.map(toolResultPartOf) };
  }
}

type ModelUserPart = Exclude<Extract<ModelMessage, { role: "user" }>["content"], string>[number];

function userPartOf(part: UserContentPart): ModelUserPart {
  const options = part.providerOptions ? { providerOptions: part.providerOptions as never } : {};
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text, ...options };
    // The AI SDK 7 wants images as file parts with an image media type.
    case "image":
      return { type: "file", data: urlOrData(part.image), mediaType: part.mediaType ?? "image", ...options };
    case "file":
      return {
        type: "file",
        data: typeof part.data === "string" ? urlOrData(part.data) : (taggedDataOf(part.data) as never),
        mediaType: part.mediaType,
        ...(part.filename ? { filename: part.filename } : {}),
        ...options,
      };
  }
}

/** Stored as text: an http(s) URL goes back as a URL (the provider or the
 * AI SDK fetches it), anything else is base64 or a data URL. */
function urlOrData(value: string): string | URL {
  return /^https?:\/\//i.test(value) ? new URL(value) : value;
}

/** Tagged file data as the AI SDK takes it: a URL as a `URL`. */
function taggedDataOf(data: TaggedFileData): unknown {
  return data.type === "url" ? { type: "url", url: new URL(data.url) } : data;
}

/** A tool's `toModelOutput`, when it had one; else strings as text (the
 * model reads them unquoted), other values as JSON; failures as errors. */
function toolResultPartOf(result: ToolResult): Extract<ModelMessage, { role: "tool" }>["content"][number] {
  const output =
    result.modelOutput !== undefined
      ? result.modelOutput
      : typeof result.output === "string"
        ? { type: result.isError ? "error-text" : "text", value: result.output }
        : { type: result.isError ? "error-json" : "json", value: result.output };
  return { type: "tool-result", toolCallId: result.callId, toolName: result.toolName, output: output as never };
}

// -- an execution's input given as model messages ------------------------------

/** The input of a start given as AI SDK model messages (or as the content
 * of one user message): the conversation messages it becomes, the last of
 * them a user message. System, user and assistant text messages are
 * accepted; tool messages are not (an input is not a tool's answer). */
export function inputMessagesOf(input: unknown, what: string): ConversationMessage[] {
  const list =
    Array.isArray(input) && input.every((item) => isRecord(item) && typeof item.role === "string")
      ? (input as LooseRecord[])
      : [{ role: "user", content: input }];
  if (list.length === 0) throw new InvalidInputError(`${what}: the input holds no message`);
  const messages = list.map((message, index) => inputMessageOf(message, `${what}: input message ${index}`));
  if (messages[messages.length - 1]?.role !== "user") {
    throw new InvalidInputError(`${what}: the last input message must be a user message (the one the agent answers)`);
  }
  return messages;
}

function inputMessageOf(message: LooseRecord, what: string): ConversationMessage {
  if (message.content === undefined && Array.isArray(message.parts)) {
    throw new InvalidInputError(
      `${what}: this is a UI message (useChat's UIMessage, with "parts"), not a model message; convert the chat's messages first: await convertToModelMessages(messages) from "ai"`,
    );
  }
  switch (message.role) {
    case "system":
      if (typeof message.content !== "string") throw new InvalidInputError(`${what}: a system message's content must be a string`);
      return { role: "system", content: message.content };
    case "user":
      return userMessageOf(message.content, what);
    case "assistant": {
      const text = typeof message.content === "string" ? message.content : textOf(partsOf(message.content, what), what);
      return { role: "assistant", text, toolCalls: [] };
    }
    default:
      throw new InvalidInputError(`${what}: role ${JSON.stringify(message.role)} is not accepted in an input; use system, user or assistant messages`);
  }
}

function userMessageOf(content: unknown, what: string): UserMessage {
  if (typeof content === "string") return { role: "user", content };
  const parts = partsOf(content, what).map((part, index) => userContentPartOf(part, `${what}, part ${index}`));
  const text = parts.map((part) => (part.type === "text" ? part.text : "")).join("");
  return parts.every((part) => part.type === "text") ? { role: "user", content: text } : { role: "user", content: text, parts };
}

function userContentPartOf(part: LooseRecord, what: string): UserContentPart {
  const providerOptions = partProviderOptionsOf(part.providerOptions, `${what}: "providerOptions"`);
  const options = providerOptions ? { providerOptions } : {};
  switch (part.type) {
    case "text":
      if (typeof part.text !== "string") throw new InvalidInputError(`${what}: a text part needs "text" as a string`);
      return { type: "text", text: part.text, ...options };
    case "image": {
      const mediaType = optionalString(part.mediaType, `${what}: "mediaType"`);
      if (isProviderReference(part.image)) {
        return { type: "file", data: { type: "reference", reference: part.image }, mediaType: mediaType ?? "image", ...options };
      }
      return { type: "image", image: dataOf(part.image, `${what}: "image"`), ...(mediaType ? { mediaType } : {}), ...options };
    }
    case "file": {
      const mediaType = optionalString(part.mediaType, `${what}: "mediaType"`);
      if (mediaType === undefined) throw new InvalidInputError(`${what}: a file part needs "mediaType"`);
      const filename = optionalString(part.filename, `${what}: "filename"`);
      return { type: "file", data: fileDataOf(part.data, `${what}: "data"`), mediaType, ...(filename ? { filename } : {}), ...options };
    }
    default:
      throw new InvalidInputError(`${what}: part type ${JSON.stringify(part.type)} is not accepted; use text, image or file parts`);
  }
}

/** A file part's data: tagged as the AI SDK 7 tags it (kept tagged), or a
 * bare URL, bytes, base64 or data URL string, or provider reference. */
function fileDataOf(value: unknown, what: string): string | TaggedFileData {
  if (isProviderReference(value)) return { type: "reference", reference: value };
  if (!isRecord(value) || value instanceof URL || value instanceof Uint8Array || value instanceof ArrayBuffer) return dataOf(value, what);
  switch (value.type) {
    case "data":
      return { type: "data", data: dataOf(value.data, `${what}.data`) };
    case "url":
      return { type: "url", url: urlOf(value.url, `${what}.url`) };
    case "reference":
      if (!isProviderReference(value.reference)) throw new InvalidInputError(`${what}.reference must map provider names to file ids (strings)`);
      return { type: "reference", reference: value.reference };
    case "text":
      if (typeof value.text !== "string") throw new InvalidInputError(`${what}.text must be a string`);
      return { type: "text", text: value.text };
    default:
      throw new InvalidInputError(`${what}: tagged file data of type ${JSON.stringify(value.type)} is not known; use data, url, reference or text`);
  }
}

function urlOf(value: unknown, what: string): string {
  if (value instanceof URL) return value.toString();
  if (typeof value === "string" && URL.canParse(value)) return value;
  throw new InvalidInputError(`${what} must be a URL`);
}

/** A provider reference (`uploadFile`): provider names mapped to file ids. */
function isProviderReference(value: unknown): value is { [provider: string]: string } {
  if (!isRecord(value) || "type" in value || value instanceof URL || value instanceof Uint8Array || value instanceof ArrayBuffer) return false;
  const entries = Object.entries(value);
  return entries.length > 0 && entries.every(([, id]) => typeof id === "string");
}

function partProviderOptionsOf(value: unknown, what: string): PartProviderOptions | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value) || !isJson(value) || !Object.values(value).every(isRecord)) {
    throw new InvalidInputError(`${what} must map provider names to JSON objects`);
  }
  return value as PartProviderOptions;
}

/** Image and file data as text: a URL as its string, bytes as base64, a
 * string (base64 or a data URL) as it is. */
function dataOf(value: unknown, what: string): string {
  if (typeof value === "string") return value;
  if (value instanceof URL) return value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64");
  if (value instanceof ArrayBuffer) return Buffer.from(value).toString("base64");
  throw new InvalidInputError(`${what} must be a URL, a base64 string, a data URL, a Uint8Array or an ArrayBuffer`);
}

function partsOf(content: unknown, what: string): LooseRecord[] {
  if (!Array.isArray(content) || !content.every(isRecord)) {
    throw new InvalidInputError(`${what}: content must be a string or an array of parts`);
  }
  return content;
}

function textOf(parts: readonly LooseRecord[], what: string): string {
  return parts
    .map((part) => {
      if (part.type !== "text" || typeof part.text !== "string")
        throw new InvalidInputError(`${what}: an assistant message in an input may hold text parts only`);
      return part.text;
    })
    .join("");
}

function optionalString(value: unknown, what: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new InvalidInputError(`${what} must be a string`);
  return value;
}

/** Reasoning parts of a model answer, JSON-safe. */
export function reasoningPartsOf(parts: readonly unknown[]): ReasoningPart[] {
  const reasoning: ReasoningPart[] = [];
  for (const part of parts) {
    if (!isRecord(part) || part.type !== "reasoning" || typeof part.text !== "string") continue;
    const metadata = part.providerMetadata ?? part.providerOptions;
    reasoning.push(isRecord(metadata) && isJson(metadata) ? { text: part.text, providerOptions: metadata as { [key: string]: Json } } : { text: part.text });
  }
  return reasoning;
}

function isRecord(value: unknown): value is LooseRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
