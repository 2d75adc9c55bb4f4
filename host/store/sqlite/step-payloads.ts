// A group's step payloads cross to the store worker as their column text,
// encoded once (docs/decisions/0129). Before, the calling thread wrote the
// whole group as one JSON text, the worker parsed it and wrote each step's
// payload as JSON again for its column: ≈1 KB a step encoded twice and
// parsed once. Now the group's text holds each step without its payload,
// and the payloads' texts travel beside it in one string (`EncodedGroup`);
// the worker binds them as they are (`ColumnText`, which `jsonText` writes
// unchanged). The text is the one the worker wrote before: `JSON.stringify`
// of a value parsed from `JSON.stringify`'s text writes that text again.
// Only the calling thread and a worker of the same build read this format.
// An operation inline (`commitInline`) keeps its payloads as values.

import type { OffloadOperation } from "../offload-operation.js";
import type { Json, StepRecord } from "../records.js";
import { ColumnText } from "./rows.js";

/** The operations whose `steps` are step records to append, and the fields
 * of each the worker writes only as a column's whole JSON text (never reads
 * as a value, on this store), sent as text too (docs/decisions/0131): a
 * barrier's and a terminal commit's usage, a tool barrier's batch (its mark
 * in the metadata, and its step's `calls`, spliced into that step's text by
 * `toolBarrier`). */
const encodedFields: ReadonlyMap<string, readonly string[]> = new Map([
  ["providerBarrier", ["usage"]],
  ["toolBarrier", ["toolBatch", "usage"]],
  ["terminalCommit", ["usage"]],
]);

/** A group for the worker, three flat strings (a structured clone copies
 * one at the cost of a memcpy; an array of strings cost ≈3 µs a run more):
 * the operations as JSON text, where an encoded step's `payload` and an
 * encoded field are their text's length; those texts one after the other
 * (an operation's steps' payloads, then its fields in `encodedFields`'s
 * order); and one character an operation, `0` plus a bit for what went as
 * text (1: its steps, 2 << i: its i-th field), `0` when it went in the text
 * as it is. */
export interface EncodedGroup {
  readonly operations: string;
  readonly payloads: string;
  readonly encoded: string;
}

export function encodeGroup(operations: readonly OffloadOperation[]): EncodedGroup {
  const sent: unknown[] = new Array<unknown>(operations.length);
  let payloads = "";
  let encoded = "";
  for (let index = 0; index < operations.length; index += 1) {
    const operation = operations[index]!;
    const fields = encodedFields.get(operation.type);
    if (fields === undefined || !ownFields(operation)) {
      // Left to the worker's checks as it is (and to the plain-data walk).
      sent[index] = operation;
      encoded += "0";
      continue;
    }
    let bits = 0;
    let copy: Record<string, unknown> | undefined;
    const steps = (operation as { readonly steps?: unknown }).steps;
    if (Array.isArray(steps) && ownFields(steps) && allSteps(steps)) {
      const bare: { kind: unknown; at: unknown; payload: number }[] = new Array<{ kind: unknown; at: unknown; payload: number }>(steps.length);
      for (let at = 0; at < steps.length; at += 1) {
        const step = steps[at] as StepRecord;
        // As `jsonText`: undefined (and a toJSON that answers undefined) is null.
        const text = JSON.stringify(step.payload ?? null) ?? "null";
        payloads += text;
        bare[at] = { kind: step.kind, at: step.at, payload: text.length };
      }
      copy = { ...operation, steps: bare };
      bits = 1;
    }
    for (let at = 0; at < fields.length; at += 1) {
      const field = fields[at]!;
      const value = (operation as unknown as Record<string, unknown>)[field];
      if (!encodable(operation, field, value)) continue;
      const text = JSON.stringify(value);
      payloads += text;
      copy ??= { ...operation };
      copy[field] = text.length;
      bits |= 2 << at;
    }
    sent[index] = copy ?? operation;
    encoded += String.fromCharCode(zero + bits);
  }
  return { operations: JSON.stringify(sent), payloads, encoded };
}

/** A field whose own JSON text is the text the whole operation's JSON held
 * for it: an own field, neither undefined nor a function or a symbol (which
 * the operation's JSON leaves out), and without a toJSON of its own (asked
 * with the field's name there, with "" alone). */
function encodable(operation: object, field: string, value: unknown): boolean {
  if (value === undefined || typeof value === "function" || typeof value === "symbol" || !Object.hasOwn(operation, field)) return false;
  return typeof value !== "object" || value === null || ownFields(value);
}

/** Every index a step (`every` would skip a sparse array's holes). */
function allSteps(steps: readonly unknown[]): boolean {
  for (let index = 0; index < steps.length; index += 1) if (!isStep(steps[index])) return false;
  return true;
}

/** A step the group's text would have written as its own fields. */
function isStep(step: unknown): boolean {
  return typeof step === "object" && step !== null && ownFields(step);
}

/** Not written through a `toJSON` of its own (left to the text as it is). */
function ownFields(value: object): boolean {
  return typeof (value as { toJSON?: unknown }).toJSON !== "function";
}

/** The worker's side: the operations parsed, each encoded step given its
 * payload's text back. */
export function decodeGroup(group: EncodedGroup): OffloadOperation[] {
  const parsed = JSON.parse(group.operations) as OffloadOperation[];
  let offset = 0;
  for (let index = 0; index < parsed.length; index += 1) {
    const bits = group.encoded.charCodeAt(index) - zero;
    if (!(bits > 0)) continue; // "0", or no mark (checked below)
    const operation = parsed[index] as unknown as Record<string, unknown>;
    if ((bits & 1) !== 0) {
      const steps = operation["steps"] as { payload: Json | ColumnText }[];
      for (let at = 0; at < steps.length; at += 1) {
        const step = steps[at]!;
        const end = offset + (step.payload as number);
        step.payload = new ColumnText(group.payloads.slice(offset, end));
        offset = end;
      }
    }
    const fields = encodedFields.get(operation["type"] as string) ?? [];
    for (let at = 0; at < fields.length; at += 1) {
      if ((bits & (2 << at)) === 0) continue;
      const end = offset + (operation[fields[at]!] as number);
      operation[fields[at]!] = new ColumnText(group.payloads.slice(offset, end));
      offset = end;
    }
  }
  // Both threads are of one build: a mismatch is a bug in this file, and
  // shifted text bound into the columns would corrupt rows silently.
  if (group.encoded.length !== parsed.length || offset !== group.payloads.length)
    throw new Error(`step payloads: ${parsed.length} operations and ${offset} of ${group.payloads.length} characters read, ${group.encoded.length} marks`);
  return parsed;
}

const zero = "0".charCodeAt(0);
