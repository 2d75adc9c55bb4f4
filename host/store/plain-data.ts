// What JSON.stringify would drop silently from an operation sent to the store
// worker (a function, a symbol) is refused instead (docs/decisions/0103).
//
// Rules kept here:
// * The walk visits what JSON.stringify visits — own enumerable keys, an
//   array's items, a `toJSON` method's result in place of its object, called
//   with the key it is written under — and runs after it, so the value has no
//   cycle (JSON.stringify threw on one).
// * Of the operations of every run (a preparation, the barriers, the
//   terminal commit), only the values user code gave are walked: inputs,
//   outputs, steps' payloads, the journal's content, tool calls' inputs and
//   results, errors, the invocation's settings (docs/decisions/0122). The
//   rest — ids, revisions, times, usage totals, the records around those
//   values — the runtime writes itself from checked strings and numbers, and
//   `checkOperation` checks what the store keys on. Any other operation is
//   walked whole.

import type { OffloadOperation } from "./offload-operation.js";
import type { JournalRecord, StepRecord, ToolCallRecord } from "./records.js";

/** Throws on what JSON.stringify would silently drop among the values it
 * writes of `value`, written under `key`. */
export function assertPlainData(value: unknown, key: string | number = ""): void {
  if (typeof value === "object" && value !== null && typeof (value as { readonly toJSON?: unknown }).toJSON === "function") {
    // As JSON.stringify: the method's result is written, once, in its place.
    assertPlainValue((value as { toJSON(key: string): unknown }).toJSON(String(key)));
  } else assertPlainValue(value);
}

/** `assertPlainData` of a value after its `toJSON`. */
function assertPlainValue(value: unknown): void {
  if (typeof value !== "object" || value === null) {
    if (typeof value === "function" || typeof value === "symbol") throw new TypeError(`a ${typeof value} is not plain data`);
    return;
  }
  const object = value as { readonly [key: string]: unknown };
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) assertPlainData(value[index], index);
    return;
  }
  for (const key in object) if (Object.hasOwn(object, key)) assertPlainData(object[key], key);
}

/** `assertPlainData` of the values of `operation` that user code gave (a
 * run's operations), or of all of it (any other). */
export function assertOperationData(operation: OffloadOperation): void {
  switch (operation.type) {
    case "prepareExecution":
      assertPlainData(operation.input, "input");
      assertPlainData(operation.config, "config");
      if (operation.blockedBy !== undefined) assertPlainData(operation.blockedBy, "blockedBy");
      assertJournal(operation.journal);
      return;
    case "providerBarrier":
      assertSteps(operation.steps);
      return;
    case "toolBarrier":
      assertCalls(operation.toolBatch);
      assertSteps(operation.steps);
      return;
    case "terminalCommit":
      assertPlainData(operation.output, "output");
      assertPlainData(operation.error, "error");
      assertPlainData(operation.approvalRequest, "approvalRequest");
      assertPlainData(operation.handoff, "handoff");
      assertSteps(operation.steps);
      assertJournal(operation.journal);
      if (operation.toolBatch !== undefined) assertCalls(operation.toolBatch);
      if (operation.callbackFailure !== undefined) assertPlainData(operation.callbackFailure, "callbackFailure");
      return;
    default:
      assertPlainData(operation);
  }
}

function assertSteps(steps: readonly StepRecord[]): void {
  // Key "": a step's payload is written as a value of its own, inline
  // (`jsonText`) and through the worker (`encodeGroup`) alike.
  for (let index = 0; index < steps.length; index += 1) assertPlainData(steps[index]!.payload, "");
}

function assertJournal(journal: readonly JournalRecord[]): void {
  for (let index = 0; index < journal.length; index += 1) assertPlainData(journal[index]!.content, "content");
}

function assertCalls(calls: readonly ToolCallRecord[]): void {
  for (let index = 0; index < calls.length; index += 1) {
    const call = calls[index]!;
    assertPlainData(call.input, "input");
    if (call.response !== undefined) assertPlainData(call.response, "response");
    if (call.failed !== undefined) assertPlainData(call.failed, "failed");
  }
}
