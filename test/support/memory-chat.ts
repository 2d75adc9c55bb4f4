// The AI SDK's `Chat` — what `useChat` runs — with its state in memory
// instead of React's, and a transport whose requests go straight to
// `chatRoutes` (as a fetch-style server would hand them over): the chat
// tests drive the shipped routes with the AI SDK's own client through these.

import { AbstractChat, DefaultChatTransport, type ChatInit, type ChatState, type ChatStatus, type UIMessage } from "ai";
import type { ChatRoutes } from "../../host/index.js";

class MemoryChatState implements ChatState<UIMessage> {
  status: ChatStatus = "ready";
  error: Error | undefined = undefined;
  constructor(public messages: UIMessage[] = []) {}
  pushMessage = (message: UIMessage): void => {
    this.messages = [...this.messages, message];
  };
  popMessage = (): void => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage): void => {
    this.messages = this.messages.map((existing, at) => (at === index ? message : existing));
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

export class Chat extends AbstractChat<UIMessage> {
  constructor(init: ChatInit<UIMessage>) {
    super({ ...init, state: new MemoryChatState(init.messages ?? []) });
  }
}

/** `DefaultChatTransport` whose `fetch` calls the routes' `handle` directly. */
export function transportTo(routes: ChatRoutes): DefaultChatTransport<UIMessage> {
  return new DefaultChatTransport<UIMessage>({
    api: "http://chat.test/api/chat",
    fetch: ((input: string | URL | Request, init?: RequestInit) => routes.handle(new Request(input, init))) as typeof fetch,
  });
}
