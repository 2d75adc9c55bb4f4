// A decision form, read back (docs/decisions/0083): which answer the person
// gave, from the fields of decision-card.ts and the wait as it is pending
// now. Only the shape is read here — JSON that does not parse, a number
// that is not one, one edit at a time — with a message naming the field;
// whether the answer may be given, and whether it fits its schema, is
// decided by the runtime the decision goes to (`env.admin.decide`).

import type { AdminDecision, Json, PendingApproval } from "../index.js";
import { schemaFields } from "./decision-card.js";
import { masked } from "./masking.js";

/** A form the person must correct; nothing was decided. */
export class FormError extends Error {}

export function decisionOfForm(fields: URLSearchParams, pending: PendingApproval, decidedBy: string | undefined): AdminDecision {
  const { request } = pending;
  const reason = (fields.get("reason") ?? "").trim();
  const common = {
    approvalId: request.approvalId,
    ...(fields.get("argumentsHash") ? { argumentsHash: fields.get("argumentsHash")! } : {}),
    ...(reason !== "" ? { reason } : {}),
    ...(decidedBy !== undefined ? { decidedBy } : {}),
  };
  const decision = fields.get("decision");
  switch (decision) {
    case "reject":
      return { ...common, approved: false };
    case "respond": {
      const respond = parseJson(fields.get("respond"), "the response in place of the tool");
      const callId = fields.get("respondCallId") || (request.toolCalls.length === 1 ? request.toolCalls[0]!.callId : undefined);
      return { ...common, respond, ...(callId !== undefined ? { callId } : {}) };
    }
    case "value":
      return { ...common, value: valueOfForm(fields, pending) };
    case "fire":
      return { approvalId: request.approvalId, fire: true, ...(decidedBy !== undefined ? { decidedBy } : {}) };
    case "approve": {
      const edits: { callId: string; input: Json }[] = [];
      for (const call of request.toolCalls) {
        const given = fields.get(`input:${call.callId}`);
        if (given === null) continue; // shown read-only (too long to edit)
        const edited = parseJson(given, `the arguments of ${call.toolName} (call ${call.callId})`);
        if (JSON.stringify(edited) !== JSON.stringify(masked(call.input))) edits.push({ callId: call.callId, input: unmasked(edited, call.input) });
      }
      if (edits.length > 1)
        throw new FormError("edit one call's arguments at a time (a decision carries one edited call); the others run as the model gave them");
      const [edit] = edits;
      return edit === undefined ? { ...common, approved: true } : { ...common, approved: true, input: edit.input, callId: edit.callId };
    }
    default:
      throw new FormError(`the decision must be "approve", "reject", "respond", "value" or "fire", got ${JSON.stringify(decision)}`);
  }
}

/** A typed wait's value: the JSON field, or one input per schema property. */
function valueOfForm(fields: URLSearchParams, pending: PendingApproval): Json {
  const json = fields.get("valueJson");
  if (json !== null) return parseJson(json, "the value");
  const schemaOf = schemaFields(pending.request.responseSchema);
  if (schemaOf === undefined) throw new FormError("this wait's schema has no simple form: give the value as JSON (valueJson)");
  const value: { [key: string]: Json } = {};
  for (const field of schemaOf) {
    const given = fields.get(`field:${field.name}`);
    if (field.type === "boolean") {
      value[field.name] = given === "true";
      continue;
    }
    if (given === null || given === "") continue; // left out: the schema says whether it may be
    if (field.type === "number" || field.type === "integer") {
      const number = Number(given);
      if (!Number.isFinite(number)) throw new FormError(`"${field.name}" must be a number, got ${JSON.stringify(given)}`);
      value[field.name] = number;
    } else value[field.name] = given;
  }
  return value;
}

function parseJson(text: string | null, what: string): Json {
  if (text === null || text.trim() === "") throw new FormError(`${what} must be JSON, and is empty`);
  try {
    return JSON.parse(text) as Json;
  } catch (error) {
    throw new FormError(`${what} must be JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The edited arguments with every value left as it was shown masked
 * (a secret-named field's `***`, a card number's `card ***1234`, a
 * token's `***`) given its stored value back: a person edits what they
 * saw. */
export function unmasked(edited: Json, original: Json): Json {
  if (JSON.stringify(edited) === JSON.stringify(masked(original))) return original;
  if (Array.isArray(edited) && Array.isArray(original))
    return edited.map((entry, index) => (index < original.length ? unmasked(entry, original[index]!) : entry));
  if (!isObject(edited) || !isObject(original)) return edited;
  const shown = masked(original) as { readonly [key: string]: Json };
  const copy: { [key: string]: Json } = {};
  for (const [key, entry] of Object.entries(edited)) {
    if (!(key in original)) copy[key] = entry;
    else copy[key] = entry === "***" && shown[key] === "***" ? original[key]! : unmasked(entry, original[key]!);
  }
  return copy;
}

function isObject(value: Json): value is { readonly [key: string]: Json } {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
