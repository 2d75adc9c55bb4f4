// The durable timeline of an execution, translated into the AI SDK's UI
// message stream chunks (docs/decisions/0036). One assistant message per
// execution; one UI step per model call:
//
//   provider barrier   start-step (after an answered call: finish-step first;
//                      after a call whose answer was never recorded — the
//                      model was called again after a crash — reset-step,
//                      which drops what that call streamed)
//   model response     the answer's parts in the order the model produced
//                      them (decision 0073): reasoning-start,
//                      reasoning-delta, reasoning-end for each reasoning
//                      part; source-url / source-document for each cited
//                      source; file (a data URL) for each generated file;
//                      text-start, text-delta (the whole text), text-end
//                      where its first text part came;
//                      tool-input-available for each tool call (`dynamic`
//                      for a dynamicTool's: a dynamic-tool part). The final
//                      answer (committed with the terminal) shows the
//                      output as the output guardrail left it, and no
//                      text when the execution failed on it (a blocked
//                      output, a spent budget)
//   approval requested tool-approval-request for each call waiting; for
//                      a typed wait, a data-wait part (wait id, call,
//                      response schema) instead
//   approval decided   tool-approval-response for each of them
//   tool results       tool-output-available, tool-output-error, or
//                      tool-output-denied when the approval was declined
//   terminal           finish-step; error when it failed (a transient
//                      data-attempt-failed part once env.retry went on)
//
// Rules kept here: the chunks of a step depend only on that step and the
// steps before it, so every process, before and after a restart,
// translates a timeline to the same chunks, and a position (`S.k`: chunk k
// of step S) means the same chunk everywhere. Nothing here reads the store.

import type { UIMessageChunk } from "ai";
import type { ExecutionRow, Json, StoredStep } from "../store/records.js";

type JsonObject = { readonly [key: string]: Json };

/** What one step became. */
export interface TranslatedStep {
  readonly chunks: readonly UIMessageChunk[];
  /** A model response: the seq of the provider barrier of the call it
   * answers, and whether its chunks open with its text (text-start,
   * text-delta, text-end), so a client that saw some of that text stream
   * gets only the rest. */
  readonly answers?: {
    readonly barrierSeq: number;
    readonly callId: string;
    readonly text: string;
    /** The text shown is not the model's (redacted or withheld): what
     * the model streamed must be dropped, not continued. */
    readonly replaced: boolean;
    /** The index of its text-start among the chunks (after its reasoning). */
    readonly textAt: number;
  };
  /** A provider barrier that replaces an unanswered call (its reset-step
   * drops what that call streamed): the seq of that call's barrier. */
  readonly replaces?: number;
}

/** The model call of the last provider barrier. */
interface ModelCall {
  readonly seq: number;
  readonly callId: string;
  answered: boolean;
}

export class TimelineTranslator {
  private call: ModelCall | undefined;
  private stepOpen = false;
  /** The UI approval ids of the calls of the last approval request. */
  private approvals: { readonly approvalId: string; readonly callIds: readonly string[] } | undefined;
  private lastSeq = 0;

  /** The model call in flight: its barrier is the last one translated and
   * no response is recorded for it yet. */
  get openCall(): { readonly seq: number; readonly callId: string } | undefined {
    return this.call !== undefined && !this.call.answered ? this.call : undefined;
  }

  /** Translates the next step; `row` is the execution's row as read with
   * the timeline (the error of a failed terminal, a final output come from
   * it), `next` the step after it in the same read: steps committed
   * together are read together. */
  translate(step: StoredStep, row: ExecutionRow | undefined, isLast: boolean, next?: StoredStep): TranslatedStep {
    if (!(step.seq > this.lastSeq)) throw new Error(`timeline steps out of order: ${step.seq} after ${this.lastSeq}`);
    this.lastSeq = step.seq;
    const payload = asObject(step.payload);
    switch (step.kind) {
      case "provider_barrier":
        return this.providerBarrier(step.seq, String(payload["callId"] ?? ""));
      case "model_response":
        return this.modelResponse(payload, finalAnswer(next, row));
      case "approval_requested":
        return { chunks: this.approvalRequested(asObject(payload["approvalRequest"])) };
      case "approval_decided":
        return { chunks: this.approvalDecided(payload) };
      case "tool_results":
        return { chunks: toolResults(payload) };
      case "terminal":
        return { chunks: this.terminal(payload, row, isLast) };
      default:
        return { chunks: [] };
    }
  }

  private providerBarrier(seq: number, callId: string): TranslatedStep {
    const previous = this.call;
    this.call = { seq, callId, answered: false };
    if (previous !== undefined && !previous.answered && this.stepOpen) return { chunks: [{ type: "reset-step" }], replaces: previous.seq };
    const chunks: UIMessageChunk[] = this.stepOpen ? [{ type: "finish-step" }, { type: "start-step" }] : [{ type: "start-step" }];
    this.stepOpen = true;
    return { chunks };
  }

  private modelResponse(payload: JsonObject, final: string | undefined): TranslatedStep {
    const call = this.call;
    const modelText = typeof payload["text"] === "string" ? payload["text"] : "";
    const text = final ?? modelText;
    const barrierSeq = call?.seq ?? this.lastSeq;
    const chunks: UIMessageChunk[] = [];
    let textAt = -1;
    for (const { kind, index } of partsInOrder(payload)) {
      if (kind === "text") {
        textAt = chunks.length;
        chunks.push(...textChunks(barrierSeq, text));
      } else chunks.push(...partChunks(payload, kind, index, barrierSeq));
    }
    // A final answer the guardrail rewrote may have text the model's had not.
    if (textAt === -1) {
      textAt = chunks.length;
      chunks.push(...textChunks(barrierSeq, text));
    }
    const dynamicCalls = new Set(asArray(payload["dynamicCalls"]).map(String));
    for (const toolCall of asArray(payload["toolCalls"]).map(asObject)) {
      const toolCallId = String(toolCall["callId"]);
      chunks.push({
        type: "tool-input-available",
        toolCallId,
        toolName: String(toolCall["toolName"]),
        input: toolCall["input"] ?? null,
        ...(dynamicCalls.has(toolCallId) ? { dynamic: true } : {}),
      });
    }
    if (call !== undefined) call.answered = true;
    return { chunks, answers: { barrierSeq, callId: String(payload["callId"] ?? call?.callId ?? ""), text, replaced: text !== modelText, textAt } };
  }

  private approvalRequested(request: JsonObject): UIMessageChunk[] {
    const approvalId = String(request["approvalId"] ?? "");
    const callIds = asArray(request["toolCalls"]).map((call) => String(asObject(call)["callId"]));
    if (request["kind"] === "input" || request["kind"] === "event") {
      // A typed wait (decision 0075) or an event wait (0077, with its key):
      // its tool part stays input-available; a data part carries what a
      // form needs, and the value or payload arrives as the call's output.
      this.approvals = undefined;
      const responseSchema = request["responseSchema"] ?? null;
      const kind = request["kind"];
      const key = kind === "event" ? { key: String(request["key"] ?? "") } : {};
      return callIds.map((toolCallId) => ({ type: "data-wait", id: approvalId, data: { waitId: approvalId, toolCallId, kind, ...key, responseSchema } }));
    }
    if (request["kind"] === "child") {
      // A wait for a child execution (decision 0079): nobody answers it
      // here; a data part names the child, and its end arrives as the
      // call's output.
      this.approvals = undefined;
      const child = asObject(request["child"]);
      return callIds.map((toolCallId) => ({
        type: "data-wait",
        id: approvalId,
        data: {
          waitId: approvalId,
          toolCallId,
          kind: "child",
          childExecutionId: child["executionId"] ?? null,
          conversationId: child["conversationId"] ?? null,
        },
      }));
    }
    this.approvals = { approvalId, callIds };
    // Why the definition's toolApproval asks, as the AI SDK sends it (the part's `approval.requestReason`).
    return asArray(request["toolCalls"]).map((call) => {
      const { callId, reason } = asObject(call);
      const toolCallId = String(callId);
      return { type: "tool-approval-request", approvalId: uiApprovalId(approvalId, toolCallId), toolCallId, ...(typeof reason === "string" ? { reason } : {}) };
    });
  }

  private approvalDecided(payload: JsonObject): UIMessageChunk[] {
    const approvals = this.approvals;
    if (approvals === undefined || approvals.approvalId !== payload["approvalId"]) return [];
    const reason = typeof payload["reason"] === "string" ? { reason: payload["reason"] } : {};
    // A call answered in place of its tool (`respond`) has no approval
    // response: a chat page answered it with addToolOutput, which drops the
    // part's approval; its output follows as the call's result.
    const action = payload["action"] !== null && typeof payload["action"] === "object" ? (payload["action"] as JsonObject) : undefined;
    const responded = action?.["kind"] === "respond" ? String(action["callId"]) : undefined;
    return approvals.callIds
      .filter((toolCallId) => toolCallId !== responded)
      .map((toolCallId) => ({
        type: "tool-approval-response",
        approvalId: uiApprovalId(approvals.approvalId, toolCallId),
        approved: payload["approved"] === true,
        ...reason,
      }));
  }

  private terminal(payload: JsonObject, row: ExecutionRow | undefined, isLast: boolean): UIMessageChunk[] {
    const chunks: UIMessageChunk[] = [];
    if (this.stepOpen) chunks.push({ type: "finish-step" });
    this.stepOpen = false;
    const outcome = String(payload["outcome"] ?? "");
    if (outcome === "failed" || outcome === "coordination_wait") {
      // Only a retry (env.retry) writes after a terminal. An attempt it
      // superseded is a transient data part, not an `error` chunk, which
      // would end a client's reading of the replay there; the row holds
      // the error of the latest attempt only.
      if (!isLast) return [...chunks, { type: "data-attempt-failed", data: { outcome }, transient: true }];
      const error = row?.status === "terminal" ? row.error : null;
      chunks.push({ type: "error", errorText: error ? `${error.code}: ${error.message}` : `the execution ended with outcome ${outcome}` });
    }
    return chunks;
  }
}

/** The text a final answer shows when the model's text is not it: the
 * stored output of a completed execution (what the output guardrail left),
 * nothing when the execution failed right after the answer (blocked, over
 * budget). Undefined: the model's text. */
function finalAnswer(next: StoredStep | undefined, row: ExecutionRow | undefined): string | undefined {
  if (next?.kind !== "terminal") return undefined;
  const outcome = asObject(next.payload)["outcome"];
  if (outcome === "completed") return row?.status === "terminal" && typeof row.output === "string" ? row.output : undefined;
  return "";
}

/** The UI approval id of one call of an approval request: Phronomy decides
 * a whole tool batch with one `approvalId`, the AI SDK one call at a time,
 * so each call's part carries `<approvalId>:<callId>`. */
export function uiApprovalId(approvalId: string, toolCallId: string): string {
  return `${approvalId}:${toolCallId}`;
}

/** The Phronomy `approvalId` inside a UI approval id (`uiApprovalId`). */
export function approvalIdOf(uiApproval: string): string {
  const colon = uiApproval.indexOf(":");
  return colon === -1 ? uiApproval : uiApproval.slice(0, colon);
}

/** The id of the text part of the model call whose barrier is step `seq`. */
export function textPartId(barrierSeq: number): string {
  return `text-${barrierSeq}`;
}

type PartKind = "reasoning" | "text" | "source" | "file";

/** The parts of a recorded answer in the model's order (`partOrder`; an
 * answer recorded without it: its reasoning, then its text), each with its
 * index among the parts of its kind. */
function partsInOrder(payload: JsonObject): { readonly kind: PartKind; readonly index: number }[] {
  const stored = asArray(payload["partOrder"]).filter(
    (kind): kind is PartKind => kind === "reasoning" || kind === "text" || kind === "source" || kind === "file",
  );
  const order: PartKind[] = stored.length > 0 ? stored : [...asArray(payload["reasoning"]).map((): PartKind => "reasoning"), "text"];
  const seen: Record<PartKind, number> = { reasoning: 0, text: 0, source: 0, file: 0 };
  return order.map((kind) => ({ kind, index: seen[kind]++ }));
}

/** The one text part of a model call (nothing for no text). */
function textChunks(barrierSeq: number, text: string): UIMessageChunk[] {
  if (text.length === 0) return [];
  const id = textPartId(barrierSeq);
  return [
    { type: "text-start", id },
    { type: "text-delta", id, delta: text },
    { type: "text-end", id },
  ];
}

/** A reasoning part, a cited source or a generated file of a recorded
 * answer, as the AI SDK's `toUIMessageStream` sends it (an empty reasoning
 * and a file kept without its bytes send nothing). */
function partChunks(payload: JsonObject, kind: Exclude<PartKind, "text">, index: number, barrierSeq: number): UIMessageChunk[] {
  const part = asObject(asArray(payload[kindFields[kind]])[index]);
  const providerMetadata = providerMetadataOf(part);
  switch (kind) {
    case "reasoning": {
      if (typeof part["text"] !== "string" || part["text"].length === 0) return [];
      const id = `r${barrierSeq}.${index}`;
      const metadata = providerOptionsOf(part);
      return [
        { type: "reasoning-start", id },
        { type: "reasoning-delta", id, delta: part["text"] },
        { type: "reasoning-end", id, ...metadata },
      ];
    }
    case "source":
      if (part["sourceType"] === "url" && typeof part["url"] === "string") {
        const title = typeof part["title"] === "string" ? { title: part["title"] } : {};
        return [{ type: "source-url", sourceId: String(part["id"] ?? ""), url: part["url"], ...title, ...providerMetadata }];
      }
      if (part["sourceType"] === "document") {
        const filename = typeof part["filename"] === "string" ? { filename: part["filename"] } : {};
        const document = { sourceId: String(part["id"] ?? ""), mediaType: String(part["mediaType"] ?? ""), title: String(part["title"] ?? "") };
        return [{ type: "source-document", ...document, ...filename, ...providerMetadata }];
      }
      return [];
    case "file":
      if (typeof part["data"] !== "string" || typeof part["mediaType"] !== "string") return [];
      return [{ type: "file", mediaType: part["mediaType"], url: `data:${part["mediaType"]};base64,${part["data"]}` }];
  }
}

/** Where a recorded answer keeps the parts of each kind. */
const kindFields = { reasoning: "reasoning", source: "sources", file: "files" } as const;

function providerMetadataOf(part: JsonObject): { providerMetadata?: Record<string, Record<string, Json>> } {
  const metadata = part["providerMetadata"];
  return typeof metadata === "object" && metadata !== null && !Array.isArray(metadata)
    ? { providerMetadata: metadata as Record<string, Record<string, Json>> }
    : {};
}

/** A reasoning part keeps its provider's metadata (a signature) as `providerOptions`. */
function providerOptionsOf(part: JsonObject): { providerMetadata?: Record<string, Record<string, Json>> } {
  return providerMetadataOf({ providerMetadata: part["providerOptions"] ?? null });
}

function toolResults(payload: JsonObject): UIMessageChunk[] {
  const declined = payload["declined"] === true;
  return asArray(payload["results"])
    .map(asObject)
    .map((result): UIMessageChunk => {
      const toolCallId = String(result["callId"]);
      if (declined) return { type: "tool-output-denied", toolCallId };
      if (result["isError"] === true) {
        const error = asObject(result["output"]);
        return { type: "tool-output-error", toolCallId, errorText: typeof error["message"] === "string" ? error["message"] : JSON.stringify(result["output"]) };
      }
      return { type: "tool-output-available", toolCallId, output: result["output"] ?? null };
    });
}

function asObject(value: Json | undefined): JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
}

function asArray(value: Json | undefined): readonly Json[] {
  return Array.isArray(value) ? value : [];
}
