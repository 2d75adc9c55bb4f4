// A group's step payloads cross to the store worker as their column text,
// encoded once (docs/decisions/0129). Before, the calling thread wrote the
// whole group as one JSON text, the worker parsed it and wrote each step's
// payload as JSON again for its column: ≈1 KB a step encoded twice and
// parsed once. Now the group's text holds each step without its payload,
// and the payloads travel beside it, one array of column texts an
// operation, which the message's structured clone copies as flat strings;
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

/** A group for the worker: the operations as JSON text, each step's
 * payload left out, and beside them each operation's payload texts in
 * order (`null`: its steps, if any, went in the text as they are). */
export interface EncodedGroup {
  readonly operations: string;
  readonly payloads: (readonly string[] | null)[];
}

export function encodeGroup(operations: readonly OffloadOperation[]): EncodedGroup {
  const sent: unknown[] = new Array<unknown>(operations.length);
  const payloads: (string[] | null)[] = new Array<string[] | null>(operations.length);
  for (let index = 0; index < operations.length; index += 1) {
    const operation = operations[index]!;
    const steps = withSteps.has(operation.type) ? (operation as { readonly steps?: unknown }).steps : undefined;
    if (!Array.isArray(steps) || !steps.every(isStep)) {
      // Left to the worker's checks as it is (and to the plain-data walk).
      sent[index] = operation;
      payloads[index] = null;
      continue;
    }
    const texts: string[] = new Array<string>(steps.length);
    const bare: { kind: unknown; at: unknown }[] = new Array<{ kind: unknown; at: unknown }>(steps.length);
    for (let at = 0; at < steps.length; at += 1) {
      const step = steps[at] as StepRecord;
      // As `jsonText`: undefined (and a toJSON that answers undefined) is null.
      texts[at] = JSON.stringify(step.payload ?? null) ?? "null";
      bare[at] = { kind: step.kind, at: step.at };
    }
    sent[index] = { ...operation, steps: bare };
    payloads[index] = texts;
  }
  return { operations: JSON.stringify(sent), payloads };
}

/** A step the group's text would have written as its own fields (a
 * `toJSON` of its own is left to the text). */
function isStep(step: unknown): boolean {
  return typeof step === "object" && step !== null && typeof (step as { toJSON?: unknown }).toJSON !== "function";
}

/** The worker's side: the operations parsed, each encoded step given its
 * payload's text back. */
export function decodeGroup(operations: string, payloads: readonly (readonly string[] | null)[]): OffloadOperation[] {
  const parsed = JSON.parse(operations) as OffloadOperation[];
  for (let index = 0; index < parsed.length; index += 1) {
    const texts = payloads[index];
    if (texts === null || texts === undefined) continue;
    const steps = (parsed[index] as unknown as { steps: { payload: Json | ColumnText }[] }).steps;
    for (let at = 0; at < steps.length; at += 1) steps[at]!.payload = new ColumnText(texts[at]!);
  }
  return parsed;
}
