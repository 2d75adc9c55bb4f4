// What a person's answer to a wait says, beyond approve or decline
// (docs/decisions/0075): approve with edited arguments (`input`), respond
// in place of the tool (`respond`), or give a typed wait its value
// (`{ waitId, value }`). Here the public shape becomes one `Decision`, the
// answer is checked against the schema of the call it is for, and the
// recorded tool batch is rewritten with it. What a decision may do to which
// wait (its kind) is the core's call: the host only reports the facts
// (`ResumeFact.PendingWaitsForInput`, `GivesValue`, `ValueRefused`).

import { createHash } from "node:crypto";
import { isJson } from "../agent/messages.js";
import { formatIssues, isStandardSchema, validateWithAnySchema, type SchemaIssue } from "../agent/schema.js";
import type { ResolvedTool } from "../agent/tools.js";
import { InvalidInputError, type PhronomyError } from "../errors.js";
import type { Json, ToolCallRecord } from "../store/records.js";
import type { ApprovalRequest, EventListener } from "./events.js";
import { waitKindOf, type WaitKind } from "../words.js";
import { childFailure, childOutcomeIn } from "./child-waits.js";
import { clockAnswerOf, hasDeadline } from "./wait-deadlines.js";

/** What an answer does to the call it is for. */
export type DecisionActionKind = "edit" | "respond" | "value" | "signal" | "child" | "fire";

/** An answer as given, before its schema saw it. */
export interface GivenAction {
  readonly kind: DecisionActionKind;
  /** The call it is for; may be left out when the wait covers one call. */
  readonly callId: string | undefined;
  readonly payload: unknown;
}

/** An answer its schema accepted: recorded with the decision, and written
 * into the tool batch (edited input, or the result in place of a run). */
export interface DecisionAction {
  readonly kind: DecisionActionKind;
  readonly callId: string;
  readonly value: Json;
  /** sha256 of the edited arguments (kind `edit`), recorded with the decision. */
  readonly inputHash?: string;
}

/** A decision on a pending wait, as the runtime carries it. */
export interface Decision {
  readonly approvalId: string;
  readonly approved: boolean;
  readonly reason?: string;
  /** Who decided (free text, recorded). */
  readonly decidedBy?: string;
  /** The approval inbox decision this is, when a claim applies it. */
  readonly filedAs?: string;
  readonly given?: GivenAction;
  /** The outcome of checking `given` against its schema, once done. */
  readonly checked?: { readonly action?: DecisionAction; readonly error?: PhronomyError };
  /** A signal offered from the store, where it was kept because it came
   * before its wait was committed (`ResumeFact.SignalStored`, decision 0077). */
  readonly storedSignal?: boolean;
  readonly onEvent?: EventListener;
  readonly signal?: AbortSignal;
}

/** What a decision may say of who decided, at most (it is stored with it). */
export const decidedByLengthMax = 256;

/** The kind of a pending wait: a typed input wait, or an approval. */
export function waitsForInput(request: ApprovalRequest | undefined): boolean {
  return request?.kind === "input";
}

/** The wait kind an answer is for: a value a typed wait, a signal an event
 * wait, a child's end a child's wait, a decision an approval. */
function kindAnswered(kind: DecisionActionKind): WaitKind {
  return kind === "value" ? "input" : kind === "signal" ? "event" : kind === "child" ? "child" : "approval";
}

/** Checks the answer against the schema of the call it is for: the call's
 * tool's input schema (edited arguments), its output schema when it has
 * one (a response), its `waitsFor` schema (a typed wait's value). An
 * answer of the other kind than the wait is left for the core to refuse. */
export async function checkAction(
  tools: readonly ResolvedTool[],
  request: ApprovalRequest,
  given: GivenAction,
): Promise<{ readonly action?: DecisionAction; readonly error?: PhronomyError }> {
  if (given.kind === "fire") return clockAction(request);
  // An answer of another kind than the wait is left for the core to refuse.
  if (kindAnswered(given.kind) !== waitKindOf(request)) return {};
  if (given.kind === "child") return childAction(request, given);
  const { executionId, approvalId } = request;
  const context = { executionId, agentId: request.agentId };
  const what = waitNameOf(given.kind, approvalId);
  const call =
    given.callId === undefined
      ? request.toolCalls.length === 1
        ? request.toolCalls[0]
        : undefined
      : request.toolCalls.find((candidate) => candidate.callId === given.callId);
  if (call === undefined) {
    const calls = request.toolCalls.map((candidate) => candidate.callId).join(", ");
    const problem =
      given.callId === undefined
        ? `covers ${request.toolCalls.length} calls (${calls}): name one with "callId"`
        : `covers no call "${given.callId}" (its calls: ${calls})`;
    return {
      error: new InvalidInputError(`execution ${executionId}: ${what} ${problem}; nothing was decided`, {
        ...context,
        details: { approvalId, callId: given.callId ?? null },
      }),
    };
  }
  const tool = tools.find((candidate) => candidate.name === call.toolName);
  if (tool?.kind !== "function") {
    return {
      error: new InvalidInputError(`execution ${executionId}: the call ${call.callId} names no function tool "${call.toolName}" here; nothing was decided`, {
        ...context,
        details: { approvalId, callId: call.callId },
      }),
    };
  }
  const schema = given.kind === "edit" ? tool.definition.inputSchema : given.kind === "respond" ? tool.definition.outputSchema : tool.definition.waitsFor;
  let value: unknown = given.payload;
  if (schema !== undefined && (given.kind === "edit" || isStandardSchema(schema))) {
    const validation = await validateWithAnySchema(schema as Parameters<typeof validateWithAnySchema>[0], given.payload);
    if (!validation.ok) return { error: refused(request, call.callId, call.toolName, given.kind, validation.issues) };
    // Edited arguments are stored as given (validated again before the call
    // runs, as the model's are); a result is stored as its schema made it.
    if (given.kind !== "edit") value = validation.value;
  }
  if (value === undefined || !isJson(value)) {
    return {
      error: new InvalidInputError(
        `execution ${executionId}: the ${nameOf(given.kind)} for call ${call.callId} must be plain JSON (it is stored); nothing was decided`,
        { ...context, details: { approvalId, callId: call.callId } },
      ),
    };
  }
  const inputHash = given.kind === "edit" ? { inputHash: createHash("sha256").update(JSON.stringify(value)).digest("hex") } : {};
  return { action: { kind: given.kind, callId: call.callId, value, ...inputHash } };
}

/** A child's end for the call its parent waits on: recorded as given
 * (the child's terminal commit wrote it). */
function childAction(request: ApprovalRequest, given: GivenAction): { readonly action?: DecisionAction; readonly error?: PhronomyError } {
  const call = request.toolCalls[0];
  const outcome = childOutcomeIn(given.payload);
  if (call === undefined || outcome === undefined || outcome.executionId !== request.child?.executionId || !isJson(given.payload)) {
    return {
      error: new InvalidInputError(
        `execution ${request.executionId}: wait ${request.approvalId} is answered only by the end of its child execution ${request.child?.executionId ?? "(unknown)"}; nothing was decided`,
        {
          executionId: request.executionId,
          agentId: request.agentId,
          details: { approvalId: request.approvalId },
        },
      ),
    };
  }
  return { action: { kind: "child", callId: call.callId, value: given.payload } };
}

/** The clock's answer (docs/decisions/0076): the waiting call's result,
 * `{ firedAt }` or `{ timedOut: true }`. A wait with no due time (an
 * approval, a typed wait without a timeout) gets none: the core refuses
 * the clock there. */
function clockAction(request: ApprovalRequest): { readonly action?: DecisionAction } {
  const call = request.toolCalls[0];
  if (!hasDeadline(request) || call === undefined || request.toolCalls.length !== 1) return {};
  return { action: { kind: "fire", callId: call.callId, value: clockAnswerOf(request, Date.now()) } };
}

function refused(request: ApprovalRequest, callId: string, toolName: string, kind: DecisionActionKind, issues: SchemaIssue[]): PhronomyError {
  const what = waitNameOf(kind, request.approvalId);
  return new InvalidInputError(
    `execution ${request.executionId}: the ${nameOf(kind)} for ${what} (tool "${toolName}", call ${callId}) failed its schema: ${formatIssues(issues)}; nothing was decided, the wait is still pending`,
    {
      executionId: request.executionId,
      agentId: request.agentId,
      details: { approvalId: request.approvalId, callId, toolName, issues, paths: issues.map((issue) => issue.path) },
    },
  );
}

function nameOf(kind: DecisionActionKind): string {
  return kind === "edit"
    ? "edited input"
    : kind === "respond"
      ? "response"
      : kind === "signal"
        ? "signal's payload"
        : kind === "fire"
          ? "clock's answer"
          : "value";
}

function waitNameOf(kind: DecisionActionKind, approvalId: string): string {
  return kind === "value" ? `wait ${approvalId}` : kind === "signal" ? `event wait ${approvalId}` : `approval ${approvalId}`;
}

/** The tool batch a decision leaves: the edited call with its new
 * arguments, the answered call with its result (it does not run), and
 * the calls a typed wait holds back declined (`ApprovalRequest.declinedCalls`). */
export function batchAfter(batch: readonly ToolCallRecord[], request: ApprovalRequest, action: DecisionAction | undefined): ToolCallRecord[] {
  const declined = new Set(request.declinedCalls ?? []);
  return batch.map((record) => {
    if (declined.has(record.callId)) return { ...record, declined: declinedReason };
    if (action === undefined || record.callId !== action.callId) return record;
    if (action.kind === "child") {
      // The child's output is the call's result; its failure the call's error.
      const outcome = childOutcomeIn(action.value);
      if (outcome?.outcome === "completed") return { ...record, response: outcome.output ?? null };
      return { ...record, failed: childFailure(outcome ?? { executionId: "(unknown)", outcome: "failed" }) };
    }
    return action.kind === "edit" ? { ...record, input: action.value } : { ...record, response: action.value };
  });
}

/** Told to the model for a call held back by a typed wait in its turn. */
export const declinedReason = "not run: it was called in the same turn as a request for a person's input; call it again if it is still needed";

/** The answer as the approval commit records it. */
export function storedActionOf(action: DecisionAction | undefined): Json | undefined {
  if (action === undefined) return undefined;
  return { kind: action.kind, callId: action.callId, value: action.value, ...(action.inputHash !== undefined ? { inputHash: action.inputHash } : {}) };
}

/** What the approval inbox carries of a decision for its owner to check:
 * the answer as given and who decided (nothing for a plain decision). */
export function filedActionOf(decision: Decision): Json | undefined {
  if (decision.given === undefined && decision.decidedBy === undefined) return undefined;
  const filed: { [key: string]: Json } = {};
  if (decision.given !== undefined)
    filed["given"] = { kind: decision.given.kind, callId: decision.given.callId ?? null, payload: decision.given.payload as Json };
  if (decision.decidedBy !== undefined) filed["decidedBy"] = decision.decidedBy;
  return filed;
}

/** A decision taken from the approval inbox, as its filer gave it. */
export function decisionOfFiled(filed: {
  readonly approvalId: string;
  readonly approved: boolean;
  readonly reason: string | null;
  readonly action?: Json;
}): Decision {
  const action = (filed.action ?? null) as { given?: { kind?: unknown; callId?: unknown; payload?: unknown }; decidedBy?: unknown } | null;
  const kind = action?.given?.kind;
  const given: GivenAction | undefined =
    kind === "edit" || kind === "respond" || kind === "value" || kind === "signal" || kind === "child" || kind === "fire"
      ? { kind, callId: typeof action?.given?.callId === "string" ? action.given.callId : undefined, payload: action?.given?.payload }
      : undefined;
  return {
    approvalId: filed.approvalId,
    approved: filed.approved,
    ...(filed.reason !== null ? { reason: filed.reason } : {}),
    ...(typeof action?.decidedBy === "string" ? { decidedBy: action.decidedBy } : {}),
    ...(given !== undefined ? { given } : {}),
  };
}
