// The parts of a model's answer beside its text and tool calls — reasoning,
// cited sources, generated files — kept with the recorded answer so that a
// chat stream shows them, replayed from any process, in the order the model
// produced them (docs/decisions/0073). Everything here is made JSON-safe:
// a recorded answer is a step's JSON.
//
// Files are kept inline, base64, up to `generatedFileBytesMax`; a bigger one
// keeps only its media type and size, because every chat stream rereads the
// timeline it tails and a step is read whole.

import type { Json } from "../words.js";
import { isJson, type GeneratedFilePart, type ModelTurn, type ResponsePartKind, type SourcePart } from "./messages.js";
import { reasoningPartsOf } from "./model-messages.js";

/** The largest generated file kept in a recorded answer, in bytes (its
 * base64 is a third larger). A chat stream rereads the timeline at each
 * poll, so a file is paid for at every read while the answer streams. */
export const generatedFileBytesMax = 1024 * 1024;

type LooseRecord = { readonly [key: string]: unknown };

/** The reasoning, sources, files and their order in the AI SDK content of
 * one step (`generateText`'s `content`, a streamed step's `content`). */
export function responsePartsOf(content: readonly unknown[]): Pick<ModelTurn, "reasoning" | "sources" | "files" | "partOrder"> {
  const reasoning = reasoningPartsOf(content);
  const sources: SourcePart[] = [];
  const files: GeneratedFilePart[] = [];
  const order: ResponsePartKind[] = [];
  for (const part of content) {
    if (!isRecord(part)) continue;
    if (part.type === "reasoning" && typeof part.text === "string") order.push("reasoning");
    else if (part.type === "text" && typeof part.text === "string" && part.text.length > 0 && !order.includes("text")) order.push("text");
    else if (part.type === "source") pushDefined(sources, sourceOf(part), order, "source");
    else if (part.type === "file") pushDefined(files, fileOf(part.file), order, "file");
  }
  if (reasoning.length + sources.length + files.length === 0) return {};
  return {
    ...(reasoning.length > 0 ? { reasoning } : {}),
    ...(sources.length > 0 ? { sources } : {}),
    ...(files.length > 0 ? { files } : {}),
    // The usual order (reasoning, then the text) goes without saying.
    ...(isUsualOrder(order) ? {} : { partOrder: order }),
  };
}

function isUsualOrder(order: readonly ResponsePartKind[]): boolean {
  const textAt = order.indexOf("text");
  return order.every((kind, index) => (index === textAt ? index === order.length - 1 : kind === "reasoning"));
}

function pushDefined<Part>(parts: Part[], part: Part | undefined, order: ResponsePartKind[], kind: ResponsePartKind): void {
  if (part === undefined) return;
  parts.push(part);
  order.push(kind);
}

function sourceOf(part: LooseRecord): SourcePart | undefined {
  const id = typeof part.id === "string" ? part.id : undefined;
  if (id === undefined) return undefined;
  const metadata =
    isRecord(part.providerMetadata) && isJson(part.providerMetadata) ? { providerMetadata: part.providerMetadata as { [key: string]: Json } } : {};
  if (part.sourceType === "url" && typeof part.url === "string") {
    return { sourceType: "url", id, url: part.url, ...(typeof part.title === "string" ? { title: part.title } : {}), ...metadata };
  }
  if (part.sourceType === "document" && typeof part.mediaType === "string") {
    const filename = typeof part.filename === "string" ? { filename: part.filename } : {};
    return { sourceType: "document", id, mediaType: part.mediaType, title: typeof part.title === "string" ? part.title : "", ...filename, ...metadata };
  }
  return undefined;
}

/** The AI SDK's `GeneratedFile` (base64 and bytes, read lazily). */
function fileOf(file: unknown): GeneratedFilePart | undefined {
  if (!isRecord(file) || typeof file.mediaType !== "string") return undefined;
  const bytes = file.uint8Array instanceof Uint8Array ? file.uint8Array.byteLength : undefined;
  if (bytes !== undefined && bytes > generatedFileBytesMax) return { mediaType: file.mediaType, bytes, omitted: true };
  const base64 = file.base64;
  if (typeof base64 !== "string") return undefined;
  return { mediaType: file.mediaType, data: base64 };
}

function isRecord(value: unknown): value is LooseRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
