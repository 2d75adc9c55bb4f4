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

/** The operations whose `steps` are step records to append. */
const withSteps: ReadonlySet<string> = new Set(["providerBarrier", "toolBarrier", "terminalCommit"]);

/** A group for the worker, three flat strings (a structured clone copies
 * one at the cost of a memcpy; an array of strings cost ≈3 µs a run more):
 * the operations as JSON text, where an encoded step's `payload` is its
 * text's length; the payloads' texts one after the other; and one
 * character an operation, `1` when its steps are encoded so, `0` when it
 * went in the text as it is. */
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
    const steps = withSteps.has(operation.type) && ownFields(operation) ? (operation as { readonly steps?: unknown }).steps : undefined;
    if (!Array.isArray(steps) || !ownFields(steps) || !allSteps(steps)) {
      // Left to the worker's checks as it is (and to the plain-data walk).
      sent[index] = operation;
      encoded += "0";
      continue;
    }
    const bare: { kind: unknown; at: unknown; payload: number }[] = new Array<{ kind: unknown; at: unknown; payload: number }>(steps.length);
    for (let at = 0; at < steps.length; at += 1) {
      const step = steps[at] as StepRecord;
      // As `jsonText`: undefined (and a toJSON that answers undefined) is null.
      const text = JSON.stringify(step.payload ?? null) ?? "null";
      payloads += text;
      bare[at] = { kind: step.kind, at: step.at, payload: text.length };
    }
    sent[index] = { ...operation, steps: bare };
    encoded += "1";
  }
  return { operations: JSON.stringify(sent), payloads, encoded };
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
    if (group.encoded.charCodeAt(index) !== one) continue;
    const steps = (parsed[index] as unknown as { steps: { payload: Json | ColumnText }[] }).steps;
    for (let at = 0; at < steps.length; at += 1) {
      const step = steps[at]!;
      const end = offset + (step.payload as number);
      step.payload = new ColumnText(group.payloads.slice(offset, end));
      offset = end;
    }
  }
  // Both threads are of one build: a mismatch is a bug in this file, and
  // shifted text bound into the columns would corrupt rows silently.
  if (group.encoded.length !== parsed.length || offset !== group.payloads.length)
    throw new Error(`step payloads: ${parsed.length} operations and ${offset} of ${group.payloads.length} characters read, ${group.encoded.length} marks`);
  return parsed;
}

const one = "1".charCodeAt(0);
