/**
 * `phronomy/chat`: what a chat page needs of Phronomy, for the browser
 * (docs/decisions/0072). `PhronomyChatTransport` is the AI SDK's chat
 * transport for `chatRoutes`: `useChat` sends through it as through
 * `DefaultChatTransport`, and an answer whose stream is cut off — a dropped
 * connection, a proxy's timeout, a restarted server — goes on from where it
 * was, in the same message, no chunk twice.
 *
 * ```ts
 * import { useChat } from "@ai-sdk/react";
 * import { PhronomyChatTransport } from "phronomy/chat";
 * const chat = useChat({ id, resume: true, transport: new PhronomyChatTransport({ api: "/api/chat" }) });
 * ```
 *
 * Nothing here imports `node:` modules, or `ai` at run time: the entry
 * loads in any browser bundle. The server side (`chatRoutes`) is in
 * `phronomy`.
 *
 * @module phronomy/chat
 */

export { PhronomyChatTransport, reconnectAttemptsMaxDefault, type PhronomyChatTransportOptions } from "./transport.js";
export type { ChatMessageMetadata } from "./chat-stream.js";
