// `waitForEvent()`: a tool whose call waits for an external event
// (docs/decisions/0077) — a payment confirmed, a document signed, a CI run
// finished. The model calls it like any tool (`awaitPayment({ orderId })`);
// `key` turns the call's input into the wait's key (`payment:42`), and the
// execution suspends, durably, until `env.signal(key, payload)` gives a
// payload its `payloadSchema` accepts. That payload is the call's result;
// no code runs. A signal sent before the wait is committed is kept and
// consumed when it is.
//
// Like `humanInput()` it is a function tool (`waitsFor` set, and
// `waitsForEvent` with the key), so tool sets, the chat stream and the
// model see the ordinary tool call it is.

import type { StandardSchemaV1 } from "@standard-schema/spec";
import { InvalidInputError, PhronomyError } from "../errors.js";
import { isStandardSchema } from "./schema.js";
import type { FunctionTool } from "./tools.js";

/** The longest wait a `timeoutMs` may ask for: a year. */
export const eventWaitTimeoutMsMax = 366 * 24 * 60 * 60 * 1000;

/** What `waitForEvent()` takes. */
export interface WaitForEventOptions<Input extends StandardSchemaV1, Payload extends StandardSchemaV1> {
  /** What the model is told the tool does ("Wait until the order is paid"). */
  readonly description?: string;
  /** What the model passes (validated like any tool input). */
  readonly inputSchema: Input;
  /** The wait's key from the call's input, e.g. `({ orderId }) => \`payment:${orderId}\``:
   * what `env.signal` names. At most 256 characters. */
  readonly key: (input: StandardSchemaV1.InferOutput<Input>) => string;
  /** What the event carries: `env.signal`'s payload is validated against
   * it, and the schema's output is the call's result. */
  readonly payloadSchema: Payload;
  /** How long the wait lasts, stored with it as its due time
   * (`request.dueAt`); what happens then is decision 0077's. */
  readonly timeoutMs?: number;
}

const optionKeys = ["description", "inputSchema", "key", "payloadSchema", "timeoutMs"];

/** Defines a tool whose call waits for an event, resumed by `env.signal(key, payload)`. */
export function waitForEvent<Input extends StandardSchemaV1, Payload extends StandardSchemaV1>(
  options: WaitForEventOptions<Input, Payload>,
): FunctionTool<StandardSchemaV1.InferOutput<Input>, StandardSchemaV1.InferOutput<Payload>> {
  if (typeof options !== "object" || options === null)
    throw new InvalidInputError("waitForEvent(): needs { description?, inputSchema, key, payloadSchema, timeoutMs? }");
  const unknownKey = Object.keys(options).find((key) => !optionKeys.includes(key));
  if (unknownKey !== undefined) throw new InvalidInputError(`waitForEvent(): "${unknownKey}" is not an option; the options are ${optionKeys.join(", ")}`);
  for (const key of ["inputSchema", "payloadSchema"] as const) {
    if (!isStandardSchema(options[key])) throw new InvalidInputError(`waitForEvent(): "${key}" must be a Standard Schema (zod, valibot, arktype, …)`);
  }
  if (typeof options.key !== "function") throw new InvalidInputError("waitForEvent(): \"key\" must be a function of the call's input returning the wait's key");
  if (options.description !== undefined && typeof options.description !== "string")
    throw new InvalidInputError('waitForEvent(): "description" must be a string');
  const timeoutMs = options.timeoutMs;
  if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > eventWaitTimeoutMsMax)) {
    throw new InvalidInputError(`waitForEvent(): "timeoutMs" must be a whole number of milliseconds from 1 to ${eventWaitTimeoutMsMax} (a year)`);
  }
  const key = options.key;
  return {
    kind: "function",
    description: options.description,
    inputSchema: options.inputSchema as StandardSchemaV1<unknown, StandardSchemaV1.InferOutput<Input>>,
    execute: () => {
      // The loop answers such a call with the signal's payload; reaching
      // here means a recorded batch lost its answer, which must not pass.
      throw new PhronomyError("INTERNAL", "a waitForEvent() tool has no code to run: its result is the payload given to env.signal(key, payload)");
    },
    needsApproval: false,
    jsonSchema: undefined,
    waitsFor: options.payloadSchema,
    waitsForEvent: { key: (input: unknown) => key(input as StandardSchemaV1.InferOutput<Input>), ...(timeoutMs !== undefined ? { timeoutMs } : {}) },
  };
}
