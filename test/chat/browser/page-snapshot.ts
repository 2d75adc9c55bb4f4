// What the chat page (app.tsx) shows, as the test reads it: the page
// publishes `chatPage` on `globalThis`, whose functions read the DOM (not
// React's state), so the test asserts what a person sees.

/** One message as rendered. */
export interface ShownMessage {
  readonly role: string;
  readonly id: string;
  /** Its text parts, joined. */
  readonly text: string;
  /** Its reasoning parts, joined. */
  readonly reasoning: string;
  /** Its attachments, as "name (media type)". */
  readonly files: readonly string[];
  /** Its tool parts: the part's type (`tool-<name>`), state and output (JSON text). */
  readonly tools: readonly { readonly tool: string; readonly state: string; readonly output: string | undefined }[];
}

/** The page as a person sees it. */
export interface PageSnapshot {
  readonly messages: readonly ShownMessage[];
  /** `useChat`'s status as shown: submitted, streaming, ready or error. */
  readonly status: string | undefined;
  readonly error: string | undefined;
}

/** What the page publishes for the test. */
export interface ChatPageProbe {
  /** The page now. */
  snapshot(): PageSnapshot;
  /** Starts recording each distinct text of the last assistant message as it changes. */
  recordAnswer(): void;
  /** The texts recorded so far, in order. */
  recordedAnswers(): string[];
}
