// `agentTool()`: an agent used as a tool of another, run as a durable child
// execution (docs/decisions/0079). The parent's model calls it like any
// tool; the parent then suspends — a wait of kind `child`, like a typed
// wait (decision 0075), costing its row — while the child runs as its own
// execution in its own conversation. The child's terminal commit files its
// outcome for the parent, and that outcome is the call's result (a
// failure: the call's error, told to the model). No code of the tool runs.
//
// It is a function tool (`waitsFor` and `childAgent` set) rather than a new
// kind, so tool sets, the chat stream and the model see an ordinary call.
// It names the child's definition by its name (what every execution
// stores), so this folder needs nothing of the runtime's.

import type { StandardSchemaV1 } from "@standard-schema/spec";
import { InvalidInputError, PhronomyError } from "../errors.js";
import type { Json } from "../words.js";
import { isJson } from "./messages.js";
import { isStandardSchema, type JsonSchema } from "./schema.js";
import type { ChildConversation, FunctionTool } from "./tools.js";

/** What `agentTool()` takes. */
export interface AgentToolOptions<Input extends StandardSchemaV1 = StandardSchemaV1<unknown, { input: string }>> {
  /** What the parent's model is told the agent does. */
  readonly description: string;
  /** What the parent's model passes; by default `{ input: string }`, the
   * child's input. With another schema the child gets the input as JSON text. */
  readonly inputSchema?: Input;
  /** The child's conversation id for a call (default: derived from the
   * parent's execution and call ids — a new conversation per call). */
  readonly conversation?: ChildConversation;
}

/** The shape `agentTool()` needs of a definition: its name. `env.agent({ name })` returns one. */
export interface NamedDefinition {
  readonly name: string;
}

/** The child's input when the tool takes `{ input: string }`. */
const defaultInputJsonSchema: JsonSchema = {
  type: "object",
  properties: { input: { type: "string", description: "What to ask the agent." } },
  required: ["input"],
  additionalProperties: false,
};

const defaultInputSchema: StandardSchemaV1<unknown, { input: string }> = {
  "~standard": {
    version: 1,
    vendor: "phronomy",
    validate: (value) => {
      const input = (value as { input?: unknown } | null)?.input;
      if (typeof value !== "object" || value === null || typeof input !== "string") {
        return { issues: [{ message: "must be an object with a string `input`", path: ["input"] }] };
      }
      return { value: { input } };
    },
  },
};

/** The child's outcome, as the parent's call receives it: any JSON (the
 * child's terminal commit wrote it). */
const childOutcomeSchema: StandardSchemaV1<unknown, Json> = {
  "~standard": {
    version: 1,
    vendor: "phronomy",
    validate: (value) => (isJson(value) ? { value } : { issues: [{ message: "a child's outcome must be plain JSON" }] }),
  },
};

/** Defines a tool that runs another agent as a durable child execution. */
export function agentTool<Input extends StandardSchemaV1 = StandardSchemaV1<unknown, { input: string }>>(
  definition: NamedDefinition,
  options: AgentToolOptions<Input>,
): FunctionTool<StandardSchemaV1.InferOutput<Input>, Json> {
  const name = (definition as { name?: unknown } | null)?.name;
  if (typeof name !== "string" || name.length === 0) {
    throw new InvalidInputError("agentTool(definition): the definition must be a named agent definition, as env.agent({ name, … }) returns it");
  }
  if (typeof options !== "object" || options === null) throw new InvalidInputError("agentTool(): needs { description, inputSchema?, conversation? }");
  const unknownKey = Object.keys(options).find((key) => !["description", "inputSchema", "conversation"].includes(key));
  if (unknownKey !== undefined) {
    throw new InvalidInputError(`agentTool(): "${unknownKey}" is not an option; the options are description, inputSchema, conversation`);
  }
  if (typeof options.description !== "string" || options.description.length === 0) {
    throw new InvalidInputError('agentTool(): "description" must be a non-empty string (the parent\'s model chooses the tool by it)');
  }
  if (options.inputSchema !== undefined && !isStandardSchema(options.inputSchema)) {
    throw new InvalidInputError('agentTool(): "inputSchema" must be a Standard Schema (zod, valibot, arktype, …)');
  }
  if (options.conversation !== undefined && typeof options.conversation !== "function") {
    throw new InvalidInputError('agentTool(): "conversation" must be a function (input, { executionId, callId, conversationId }) => string');
  }
  const custom = options.inputSchema !== undefined;
  return {
    kind: "function",
    description: options.description,
    inputSchema: (options.inputSchema ?? defaultInputSchema) as StandardSchemaV1<unknown, StandardSchemaV1.InferOutput<Input>>,
    execute: () => {
      // The loop answers such a call with the child's outcome; reaching here
      // means a recorded batch lost its answer, which must not pass.
      throw new PhronomyError("INTERNAL", `an agentTool() of "${name}" has no code to run: its result is its child execution's outcome`);
    },
    needsApproval: false,
    jsonSchema: custom ? undefined : defaultInputJsonSchema,
    waitsFor: childOutcomeSchema,
    childAgent: { definition: name, ...(options.conversation !== undefined ? { conversation: options.conversation } : {}) },
  };
}

/** The child's input for the call's (validated) input: the `input` string
 * of the default schema, else the input as JSON text. */
export function childInputOf(input: unknown): string {
  const text = (input as { input?: unknown } | null)?.input;
  if (typeof text === "string" && typeof input === "object" && input !== null && Object.keys(input).length === 1) return text;
  return JSON.stringify(input ?? null);
}
