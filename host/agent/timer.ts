// `timer()`: a tool whose call waits for time (docs/decisions/0076). The
// model calls it like any tool, with arguments its `inputSchema` checks
// (how long, until when, what for); `until` turns them into the due time —
// a Date, or milliseconds from now. The execution then suspends exactly as
// for a typed wait (durably, costing its row, nothing held in memory
// beyond a suspended execution's core record) until the due sweep finds it
// due — in this process or, after a restart, whichever holds the store or
// the conversation's partition — or until `agent.resume(executionId,
// { waitId, fire: true })` fires it early. The call's result is
// `{ firedAt }`; no code runs.
//
// A noun for what the call waits for, as `humanInput()` is: a "sleep"
// names what the agent does, and a tool is named for what it gives.

import type { StandardSchemaV1 } from "@standard-schema/spec";
import { InvalidInputError, PhronomyError } from "../errors.js";
import { isStandardSchema } from "./schema.js";
import type { FunctionTool } from "./tools.js";

/** What a timer's call returns once it fires. */
export interface TimerFired {
  /** When it fired (ms since the epoch): at or after its due time, or
   * earlier when fired by hand. */
  readonly firedAt: number;
}

/** What `timer()` takes. */
export interface TimerOptions<Input extends StandardSchemaV1> {
  /** What the model is told the tool does ("Wait until …"). */
  readonly description?: string;
  /** What the model passes (validated like any tool input). */
  readonly inputSchema: Input;
  /** When the call is due: a Date, or milliseconds from now (from 0 to ten
   * years). Called once, when the call is made; its answer is stored. */
  readonly until: (input: StandardSchemaV1.InferOutput<Input>) => Date | number;
}

const optionKeys = ["description", "inputSchema", "until"];

/** Defines a tool whose call waits, durably, for a time. */
export function timer<Input extends StandardSchemaV1>(options: TimerOptions<Input>): FunctionTool<StandardSchemaV1.InferOutput<Input>, TimerFired> {
  if (typeof options !== "object" || options === null) throw new InvalidInputError("timer(): needs { description?, inputSchema, until }");
  const unknownKey = Object.keys(options).find((key) => !optionKeys.includes(key));
  if (unknownKey !== undefined) throw new InvalidInputError(`timer(): "${unknownKey}" is not an option; the options are ${optionKeys.join(", ")}`);
  if (!isStandardSchema(options.inputSchema)) throw new InvalidInputError('timer(): "inputSchema" must be a Standard Schema (zod, valibot, arktype, …)');
  if (typeof options.until !== "function")
    throw new InvalidInputError('timer(): "until" must be a function of the input giving a Date or milliseconds from now');
  if (options.description !== undefined && typeof options.description !== "string") throw new InvalidInputError('timer(): "description" must be a string');
  return {
    kind: "function",
    description: options.description,
    inputSchema: options.inputSchema as StandardSchemaV1<unknown, StandardSchemaV1.InferOutput<Input>>,
    execute: () => {
      // The loop answers such a call when it fires; reaching here means a
      // recorded batch lost its answer, which must not pass.
      throw new PhronomyError("INTERNAL", "a timer() tool has no code to run: its result is { firedAt }, given when it fires");
    },
    needsApproval: false,
    jsonSchema: undefined,
    sleepsUntil: options.until as (input: never) => Date | number,
  };
}
