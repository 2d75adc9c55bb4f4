// `humanInput()`: a tool whose call waits for a person (docs/decisions/0075).
// The model calls it like any tool, with arguments its `inputSchema`
// checks (what it asks: a question, a form's title); the execution then
// suspends exactly as for an approval — durably, costing a row — until
// `agent.resume(executionId, { waitId, value })` gives a value its
// `responseSchema` accepts. That value is the call's result; no code runs.
//
// It is a function tool (`waitsFor` set) rather than a new kind, so a tool
// set, the chat stream and the AI SDK conversion treat it as the tool call
// it is to the model.

import type { StandardSchemaV1 } from "@standard-schema/spec";
import { InvalidInputError, PhronomyError } from "../errors.js";
import { isStandardSchema } from "./schema.js";
import { waitMsMax, type FunctionTool } from "./tools.js";

/** What `humanInput()` takes. */
export interface HumanInputOptions<Input extends StandardSchemaV1, Response extends StandardSchemaV1> {
  /** What the model is told the tool does ("Ask the customer for …"). */
  readonly description?: string;
  /** What the model passes when it asks (validated like any tool input). */
  readonly inputSchema: Input;
  /** What the person must answer: `agent.resume`'s `value` is validated
   * against it, and the schema's output is the call's result. */
  readonly responseSchema: Response;
  /** How long the wait may last (ms): past it, the call's result is
   * `{ timedOut: true }` and the execution goes on (docs/decisions/0076). */
  readonly timeoutMs?: number;
}

/** Defines a tool whose call waits for a typed answer from a person. */
export function humanInput<Input extends StandardSchemaV1, Response extends StandardSchemaV1>(
  options: HumanInputOptions<Input, Response>,
): FunctionTool<StandardSchemaV1.InferOutput<Input>, StandardSchemaV1.InferOutput<Response>> {
  if (typeof options !== "object" || options === null) throw new InvalidInputError("humanInput(): needs { description?, inputSchema, responseSchema }");
  const unknownKey = Object.keys(options).find((key) => !["description", "inputSchema", "responseSchema", "timeoutMs"].includes(key));
  if (unknownKey !== undefined) {
    throw new InvalidInputError(`humanInput(): "${unknownKey}" is not an option; the options are description, inputSchema, responseSchema, timeoutMs`);
  }
  for (const key of ["inputSchema", "responseSchema"] as const) {
    if (!isStandardSchema(options[key])) throw new InvalidInputError(`humanInput(): "${key}" must be a Standard Schema (zod, valibot, arktype, …)`);
  }
  if (options.description !== undefined && typeof options.description !== "string") {
    throw new InvalidInputError('humanInput(): "description" must be a string');
  }
  return {
    kind: "function",
    description: options.description,
    inputSchema: options.inputSchema as StandardSchemaV1<unknown, StandardSchemaV1.InferOutput<Input>>,
    execute: () => {
      // The loop answers such a call with the value a person gave; reaching
      // here means a recorded batch lost its answer, which must not pass.
      throw new PhronomyError("INTERNAL", "a humanInput() tool has no code to run: its result is the value given to agent.resume({ waitId, value })");
    },
    needsApproval: false,
    jsonSchema: undefined,
    waitsFor: options.responseSchema,
    ...(options.timeoutMs !== undefined ? { waitTimeoutMs: checkedTimeout(options.timeoutMs) } : {}),
  };
}

function checkedTimeout(timeoutMs: unknown): number {
  if (typeof timeoutMs !== "number" || !Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > waitMsMax) {
    throw new InvalidInputError(`humanInput(): "timeoutMs" must be an integer of milliseconds from 0 to ${waitMsMax}, got ${String(timeoutMs)}`);
  }
  return timeoutMs;
}
