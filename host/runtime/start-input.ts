// An execution's input as a start gives it — a string, or AI SDK model
// messages (multi-part user content: text, images, files) — and as the
// store keeps it: the string as it is, messages as `{ messages: [...] }` in
// Phronomy's JSON-safe conversation format. The text of the last user
// message stands for the input wherever text is needed: the input
// guardrail, the journal (memory of later executions), handoffs.

import { InvalidInputError } from "../errors.js";
import { isConversationMessage, type ConversationMessage } from "../agent/messages.js";
import { inputMessagesOf } from "../agent/model-messages.js";
import type { Json } from "../store/records.js";
import { checkWithGuardrail, type CheckedVerdict } from "./options.js";
import type { AgentEntry, StartRequest } from "./requests.js";

/** Inputs longer than this are refused: a prompt is not a file upload. */
export const INPUT_LENGTH_MAX = 1_000_000;
/** Message inputs may carry images and files: their JSON is bounded here. */
export const INPUT_MESSAGES_LENGTH_MAX = 20_000_000;

export interface StartInput {
  /** The text of the input (the last user message's text). */
  readonly input: string;
  /** The input's messages, when it was given as messages. */
  readonly inputMessages?: ConversationMessage[];
}

/** The start's input guardrail verdict (the start's own guardrail, else
 * its agent's), asked once per request and kept with it: a start prepared
 * again (placed again, docs/decisions/0112) or queued after a refused
 * preparation reads it instead of asking again (docs/decisions/0116). */
export function inputVerdictOf(request: StartRequest, agent: AgentEntry): CheckedVerdict {
  return (request.inputVerdict ??= checkWithGuardrail(request.options.inputGuardrail ?? agent.definition.inputGuardrail, request.input));
}

/** Checks and converts what `agent.start` was given. */
export function startInputOf(given: unknown, what: string): StartInput {
  if (typeof given === "string") {
    if (given.length === 0 || given.length > INPUT_LENGTH_MAX) {
      throw new InvalidInputError(`${what}: input must be a non-empty string of at most ${INPUT_LENGTH_MAX} characters, or AI SDK model messages`);
    }
    return { input: given };
  }
  if (!Array.isArray(given)) {
    throw new InvalidInputError(`${what}: input must be a string, AI SDK model messages, or the parts of one user message`);
  }
  const inputMessages = inputMessagesOf(given, what);
  if (JSON.stringify(inputMessages).length > INPUT_MESSAGES_LENGTH_MAX) {
    throw new InvalidInputError(`${what}: the input messages take more than ${INPUT_MESSAGES_LENGTH_MAX} characters as JSON; send large files by URL`);
  }
  return { input: lastUserText(inputMessages), inputMessages };
}

/** What the store keeps as the execution's input. */
export function persistedInput(start: StartInput): Json {
  return start.inputMessages === undefined ? start.input : { messages: start.inputMessages as unknown as Json };
}

/** The input the store kept, as a start gives it. */
export function storedStartInput(stored: Json): StartInput {
  if (typeof stored === "string") return { input: stored };
  const messages = typeof stored === "object" && stored !== null && !Array.isArray(stored) ? stored["messages"] : undefined;
  if (Array.isArray(messages) && messages.length > 0 && messages.every(isConversationMessage)) {
    const inputMessages = messages as ConversationMessage[];
    return { input: lastUserText(inputMessages), inputMessages };
  }
  return { input: JSON.stringify(stored) };
}

/** The input after the input guardrail redacted its text: the last user
 * message becomes that text (its images and files are dropped with it). */
export function redactedStartInput(start: StartInput, text: string): StartInput {
  if (start.inputMessages === undefined) return { input: text };
  return { input: text, inputMessages: [...start.inputMessages.slice(0, -1), { role: "user", content: text }] };
}

function lastUserText(messages: readonly ConversationMessage[]): string {
  const last = messages[messages.length - 1];
  return last?.role === "user" ? last.content : "";
}
