// Which earlier answer a chat request replaces (docs/decisions/0070): the
// AI SDK's `regenerate()` and an edit (`sendMessage({ text, messageId })`)
// send the chat cut back to the user message to answer again, with
// `trigger: "regenerate-message"` or `trigger: "submit-message"` and a
// `messageId`. The routes then start with `replaceFrom` the execution that
// answered that user message, so the conversation's memory loses the old
// turn and every later one, as the page did.
//
// How a UI message names its execution: an assistant message's id is its
// execution's (the stream's `start` chunk, and `messages()`), a user
// message loaded from history names it in its metadata (its id is the
// client's own, or `<executionId>:user` once the execution was pruned —
// decision 0081); a user message the
// page sent itself has an id the page made up, so it is placed by
// position: after the nearest earlier message that names an execution, the
// k-th user message is the k-th turn after that execution in memory.
//
// Only those two triggers replace anything: a plain submit never does,
// however its history reads, so a client that sends a partial history (a
// custom `prepareSendMessagesRequest`) never cuts memory by accident.

import { PhronomyError } from "../errors.js";

/** What the mapping reads of a request message. */
export interface TurnMessage {
  readonly id?: unknown;
  readonly role: string;
  readonly metadata?: unknown;
}

/** The request's fields that say it replaces an answer. */
export interface ReplacingRequest {
  readonly messages: readonly TurnMessage[];
  readonly trigger?: string | undefined;
  readonly messageId?: string | undefined;
}

/** Whether the request asks to replace an answer (regenerate, or an edit). */
export function isReplacing(request: ReplacingRequest): boolean {
  return request.trigger === "regenerate-message" || (request.trigger === "submit-message" && request.messageId !== undefined);
}

/** The execution whose turn the request's last (user) message replaces,
 * given the conversation's turns (its executions in memory, oldest first);
 * undefined when it answers a message memory has no turn for yet. */
export function replacedExecution(request: ReplacingRequest, turns: readonly string[]): string | undefined {
  // `regenerate({ messageId })` of an assistant message names its execution.
  if (request.trigger === "regenerate-message" && request.messageId !== undefined && turns.includes(request.messageId)) return request.messageId;
  const messages = request.messages;
  const last = messages.at(-1);
  const own = last === undefined ? undefined : executionOf(last);
  if (own !== undefined && turns.includes(own)) return own;
  let usersAfter = 0;
  for (let index = messages.length - 2; index >= 0; index -= 1) {
    const message = messages[index]!;
    const named = executionOf(message);
    const at = named === undefined ? -1 : turns.indexOf(named);
    if (at >= 0) return turns[at + 1 + usersAfter];
    if (message.role === "assistant") {
      throw new PhronomyError(
        "INVALID_INPUT",
        `the chat's history names answer ${String(message.id)}, which is not in the conversation's memory (retention trimmed it, or it is not this chat's), so the message to answer again cannot be placed; start a new chat`,
        { details: { reason: "replace_unplaced" } },
      );
    }
    if (message.role === "user") usersAfter += 1;
  }
  return turns[usersAfter];
}

/** The executions of the conversation's memory, oldest first, from its UI
 * messages (each carries its execution in its metadata). */
export function turnsOf(history: readonly { readonly metadata?: unknown }[]): string[] {
  const turns: string[] = [];
  for (const message of history) {
    const executionId = (message.metadata as { executionId?: unknown } | undefined)?.executionId;
    if (typeof executionId === "string" && turns.at(-1) !== executionId) turns.push(executionId);
  }
  return turns;
}

/** The execution a UI message names: an assistant message's id (or its
 * metadata's `executionId`), a history user message's `<id>:user`. */
function executionOf(message: TurnMessage): string | undefined {
  const id = typeof message.id === "string" ? message.id : undefined;
  if (message.role === "assistant") {
    const named = (message.metadata as { executionId?: unknown } | undefined)?.executionId;
    return typeof named === "string" ? named : id;
  }
  if (message.role !== "user") return undefined;
  // A history user message names its execution in its metadata, under the
  // client's own id or `<id>:user` (decision 0081).
  const named = (message.metadata as { executionId?: unknown } | undefined)?.executionId;
  if (typeof named === "string") return named;
  return id?.endsWith(":user") ? id.slice(0, -":user".length) : undefined;
}
