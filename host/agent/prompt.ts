// The conversation as a provider prompt and back, in the shapes of the
// AI SDK provider interface (`@ai-sdk/provider` v4, which v2 and v3 share for
// text, tool-call and tool-result parts). Model calls go through the AI
// SDK's own functions (model.ts); these are for the scripted model, which
// hands its script the conversation a prompt carries, and for tests.

import type {
  LanguageModelV2Prompt,
  LanguageModelV3Prompt,
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
} from "@ai-sdk/provider";
import type { UsageTotals } from "../words.js";
import { isJson, type ConversationMessage, type ToolCall, type ToolResult } from "./messages.js";
import type { ToolSpecification } from "./tools.js";

type LooseRecord = { readonly [key: string]: unknown };

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
export function promptToConversation(prompt: LanguageModelV4Prompt | LanguageModelV3Prompt | LanguageModelV2Prompt): ConversationMessage[] {
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
  const output: LanguageModelV4ToolResultOutput =
    typeof result.output === "string"
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
  const value =
    output.type === "execution-denied"
      ? // As the session records a decline (its stored output).
        { declined: true, reason: typeof output.reason === "string" ? output.reason : null }
      : output.type === "content"
        ? textOfParts(Array.isArray(output.value) ? output.value.filter(isRecord) : [])
        : isJson(output.value)
          ? output.value
          : null;
  return { callId: String(part.toolCallId), toolName: String(part.toolName), output: value, isError };
}

function tokenCount(value: unknown): number {
  if (isRecord(value)) return tokenCount(value.total);
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}

function isRecord(value: unknown): value is LooseRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
