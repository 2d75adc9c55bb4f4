// A conversation's user message as the chat page sent it (docs/decisions/
// 0081): while its execution is stored, `conversation.messages()` gives the
// message back under the id the client gave it (the start's `messageId`,
// which `chatRoutes` passes) and with its attachments as file parts, read
// from the execution's stored input — so a reloaded `useChat` shows the
// files it sent, and an edit or a regenerate names the same message
// before and after the reload. Once retention pruned the execution, the
// memory's text stands alone under `<executionId>:user`.
//
// Rules kept here: only what a page can show is given back — text, and a
// file or image whose data is a URL or inline bytes (as a data URL); a
// provider's file reference has no URL and is left out. The message's
// metadata still names its execution, which is how the routes place it.

import type { FileUIPart, TextUIPart, UIMessage } from "ai";
import type { UserContentPart } from "../agent/messages.js";
import type { HistoryMetadata } from "../runtime/journal-messages.js";
import { storedStartInput } from "../runtime/start-input.js";
import type { ExecutionRow } from "../store/records.js";

type UserPart = TextUIPart | FileUIPart;

/** The user message `remembered` (from memory) as its execution's row
 * holds it: the client's id, its text and its attachments. */
export function userMessageOf(remembered: UIMessage<HistoryMetadata>, row: ExecutionRow | undefined): UIMessage<HistoryMetadata> {
  if (row === undefined) return remembered;
  const messageId = row.metadata?.config?.["messageId"];
  const parts = storedPartsOf(row);
  return {
    ...remembered,
    ...(typeof messageId === "string" && messageId.length > 0 ? { id: messageId } : {}),
    ...(parts !== undefined ? { parts } : {}),
  };
}

/** The stored input's last user message as UI parts, when it has parts. */
function storedPartsOf(row: ExecutionRow): UserPart[] | undefined {
  const last = storedStartInput(row.input).inputMessages?.at(-1);
  if (last?.role !== "user" || last.parts === undefined) return undefined;
  const parts = last.parts.flatMap((part): UserPart[] => {
    const shown = uiPartOf(part);
    return shown === undefined ? [] : [shown];
  });
  return parts.length > 0 ? parts : undefined;
}

function uiPartOf(part: UserContentPart): UserPart | undefined {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text };
    case "image": {
      const mediaType = part.mediaType ?? "image/*";
      const url = urlOf(part.image, mediaType);
      return url === undefined ? undefined : { type: "file", mediaType, url };
    }
    case "file": {
      const url = urlOf(part.data, part.mediaType);
      if (url === undefined) return undefined;
      return { type: "file", mediaType: part.mediaType, url, ...(part.filename !== undefined ? { filename: part.filename } : {}) };
    }
  }
}

/** A URL a page can load for the data: a URL as it is, bytes (base64) or
 * inline text as a data URL; undefined for a provider's reference. */
function urlOf(data: Extract<UserContentPart, { type: "file" }>["data"], mediaType: string): string | undefined {
  // Base64 has no ":": a string with a scheme is a URL.
  if (typeof data === "string") return /^[a-z][a-z0-9+.-]*:/i.test(data) ? data : `data:${mediaType};base64,${data}`;
  switch (data.type) {
    case "url":
      return data.url;
    case "data":
      return `data:${mediaType};base64,${data.data}`;
    case "text":
      return `data:${mediaType};base64,${Buffer.from(data.text, "utf8").toString("base64")}`;
    case "reference":
      return undefined;
  }
}
