// Tool definitions and what the agent loop asks of them. `tool()` and
// `handoff()` build definitions, and any AI SDK tool is taken as it is:
// `tool()` and `dynamicTool()` from `ai` with a Standard Schema or an AI SDK
// schema (`jsonSchema()`, as the AI SDK's MCP client returns its tools),
// with `outputSchema`, `toModelOutput`, `strict`, `providerOptions` and
// `needsApproval`. `resolveTools()` checks a tool set once (at agent
// definition) and fixes each tool's name and the JSON Schema the model is
// shown; `validateToolInput()`, `toolNeedsApproval()`, `toolModelOutput()`
// and `toolOutputToJson()` are the loop's per-call steps. A handoff tool has
// no `execute`: the loop recognises `kind: "handoff"` and ends the execution
// with outcome `handed_off` to the agent named by `to`. Provider-executed
// tools (`type: "provider"`) are refused: their calls and results never
// pass through the loop's barriers. Every bad definition is an
// `InvalidInputError` naming the tool's key and the offending option.

import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { ModelMessage, Tool } from "ai";
import { InvalidInputError, ToolFailedError, type ErrorContext } from "../errors.js";
import type { Json } from "../words.js";
import { isJson } from "./messages.js";
import {
  aiSdkJsonSchemaOf,
  convertToJsonSchema,
  formatIssues,
  isStandardSchema,
  toolSchemaOf,
  isThenable,
  validateWithAnySchemaNow,
  type AiSdkSchema,
  type SchemaValidation,
  type JsonSchema,
} from "./schema.js";

/** What `execute` receives besides its input: the AI SDK's tool execution
 * options (`toolCallId`, `messages`, `abortSignal`, `experimental_context`)
 * and Phronomy's own. The idempotency key is `executionId:callId`, the same
 * on every attempt and across recovery re-dispatches of the call, so a tool
 * with side effects can deduplicate them. `signal` and `callId` are the
 * older names of `abortSignal` and `toolCallId`. */
export interface ToolExecutionContext {
  /** The model's id for this call. */
  readonly toolCallId: string;
  /** The conversation so far, as AI SDK model messages. */
  readonly messages: ModelMessage[];
  /** Fires when the execution is cancelled or times out: stop the work. */
  readonly abortSignal: AbortSignal;
  /** The tool's context (AI SDK 7): the agent's `toolsContext[toolName]`. */
  readonly context: unknown;
  /** The agent's `experimental_context` (AI SDK 5 and 6). */
  readonly experimental_context: unknown;
  /** `executionId:callId`: the same on every attempt and after recovery;
   * key the tool's side effect on it. */
  readonly idempotencyKey: string;
  /** The execution making the call. */
  readonly executionId: string;
  /** Its conversation (agent id): a per-user tool reads whose it is here. */
  readonly conversationId: string;
  /** The start's `metadata` (JSON, kept with the execution: the same after
   * a resume and after recovery); undefined without one. */
  readonly metadata: { readonly [key: string]: Json } | undefined;
  /** 1 for the first attempt; more when the tool opted in to retries. */
  readonly attempt: number;
  /** `abortSignal`, by its older name. */
  readonly signal: AbortSignal;
  /** `toolCallId`, by its older name. */
  readonly callId: string;
}

/** What `needsApproval` receives besides the input (as in the AI SDK). */
export interface ApprovalContext {
  /** The model's id for this call. */
  readonly toolCallId: string;
  /** The conversation so far, as AI SDK model messages. */
  readonly messages: ModelMessage[];
  /** The tool's context (AI SDK 7): the agent's `toolsContext[toolName]`. */
  readonly context: unknown;
  /** The agent's `experimental_context` (AI SDK 5 and 6). */
  readonly experimental_context: unknown;
  /** The execution's conversation (agent id); absent where no execution asks. */
  readonly conversationId?: string;
  /** The start's `metadata`, as a tool's `execute` gets it. */
  readonly metadata?: { readonly [key: string]: Json } | undefined;
}

/** A tool's `needsApproval` as a function of the call's input: true makes
 * the call wait for a human decision. */
export type ApprovalPredicate<Input> = (input: Input, options: ApprovalContext) => boolean | PromiseLike<boolean>;

/** The AI SDK's `toModelOutput`: what the model is shown of a result. */
export type ToModelOutput = (options: { toolCallId: string; input: unknown; output: unknown }) => unknown;

/** A function tool as `tool()` returns it. */
export interface FunctionTool<Input = unknown, Output = unknown> {
  /** Tells a function tool from a handoff. */
  readonly kind: "function";
  /** What the model is told the tool does. */
  readonly description: string | undefined;
  /** Validates the model's input (a Standard Schema, or an AI SDK schema). */
  readonly inputSchema: StandardSchemaV1<unknown, Input> | AiSdkSchema;
  /** Runs the tool on a validated input. The output must be JSON-safe (it
   * is persisted and sent to the model); `undefined` is recorded as null.
   * An async iterable's last value is the output (the AI SDK's
   * preliminary results). */
  execute(input: Input, context: ToolExecutionContext): Output | PromiseLike<Output> | AsyncIterable<Output>;
  /** Whether a call waits for a human decision (or a function of its input deciding it). */
  readonly needsApproval: boolean | ApprovalPredicate<Input>;
  /** An explicit JSON Schema for the model; wins over a converted one. */
  readonly jsonSchema: JsonSchema | undefined;
  /** What the model is shown of a result (the AI SDK's `toModelOutput`). */
  readonly toModelOutput?: ToModelOutput;
  /** The AI SDK's `outputSchema`, kept as given. */
  readonly outputSchema?: unknown;
  /** Strict schema adherence, for providers that support it. */
  readonly strict?: boolean;
  /** A display title (AI SDK). */
  readonly title?: string;
  /** Provider-specific options of the tool (AI SDK). */
  readonly providerOptions?: Json;
  /** Example inputs shown to the model (AI SDK). */
  readonly inputExamples?: Json;
  /** Attempts after the first when `execute` throws (default 0: a tool
   * runs once unless it says it is safe to run again). */
  readonly maxRetries?: number;
  /** A `humanInput()` tool: a call suspends the execution until a person
   * gives a value this schema accepts; the value is the call's result
   * and `execute` is never called (docs/decisions/0075). */
  readonly waitsFor?: StandardSchemaV1;
  /** A `waitForEvent()` tool: the wait is keyed (`key` of the call's
   * input) and resumed by `env.signal(key, payload)`, `waitsFor` checking
   * the payload; `timeoutMs` is stored as the wait's due time
   * (docs/decisions/0077). */
  readonly waitsForEvent?: EventWaitOptions;
  /** An `agentTool()`: a call runs this child agent as a durable child
   * execution and waits for its end (set with `waitsFor`, decision 0079). */
  readonly childAgent?: ChildAgentSpecification;
  /** A `timer()` tool: a call suspends the execution until the time this
   * gives for its input (a Date, or milliseconds from now); the call's
   * result is `{ firedAt }` and `execute` is never called (docs/decisions/0076). */
  readonly sleepsUntil?: (input: never) => Date | number;
  /** A `humanInput()` tool's timeout: the wait ends after this long with
   * `{ timedOut: true }` as the call's result (docs/decisions/0076). */
  readonly waitTimeoutMs?: number;
}

/** How a `waitForEvent()` call's wait is keyed, and for how long it waits. */
export interface EventWaitOptions {
  /** The wait's key, of the call's input as its schema made it (a method:
   * a helper's typed function is accepted). */
  key(input: unknown): string;
  readonly timeoutMs?: number;
}

/** What decides the child's conversation id from the call: by default
 * `<parent execution id>:<call id>`, so a recovery of either finds the
 * same child. */
export type ChildConversation = (input: unknown, context: { readonly executionId: string; readonly callId: string; readonly conversationId: string }) => string;

/** The child a tool call runs (`FunctionTool.childAgent`). */
export interface ChildAgentSpecification {
  /** The child's definition name (`env.agent({ name })`). */
  readonly definition: string;
  /** The child's conversation id for a call (absent: derived from the
   * parent's execution and call ids). */
  readonly conversation?: ChildConversation;
}

/** A handoff as `handoff()` returns it. */
export interface HandoffTool {
  /** Tells a handoff from a function tool. */
  readonly kind: "handoff";
  /** The id of the agent that takes the conversation over. */
  readonly to: string;
  /** What the model is told the handoff is for. */
  readonly description: string | undefined;
}

// `any` here is deliberate: a set holds tools of different input types, and
// `execute`/`needsApproval` take their input contravariantly.
/** A function tool of any input and output types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyFunctionTool = FunctionTool<any, any>;
/** An AI SDK tool (`tool()`, `dynamicTool()` of `ai`, an MCP client's),
 * with Phronomy's `maxRetries` for tools safe to run again. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AiSdkTool = Tool<any, any> & { readonly maxRetries?: number };
/** A Phronomy tool or handoff, or an AI SDK tool as `ai` builds it. */
export type ToolDefinition = AnyFunctionTool | HandoffTool | AiSdkTool;
/** An agent's tools, by the name the model calls them. */
export type ToolSet = { readonly [name: string]: ToolDefinition };

/** What `tool()` takes. */
export interface ToolOptions<Schema extends StandardSchemaV1, Output> {
  /** What the model is told the tool does. */
  readonly description?: string;
  /** Any Standard Schema (zod, valibot, arktype, …): validates the model's
   * input, and is converted to the JSON Schema the model is shown. */
  readonly inputSchema: Schema;
  /** Runs the tool on the validated input; the output must be JSON-safe. */
  execute(input: StandardSchemaV1.InferOutput<Schema>, context: ToolExecutionContext): Output | PromiseLike<Output>;
  /** true (or a function of the input returning true) makes a call wait
   * for a human decision before it runs. Default false. */
  readonly needsApproval?: boolean | ApprovalPredicate<StandardSchemaV1.InferOutput<Schema>>;
  /** The JSON Schema the model is shown, instead of the one converted from `inputSchema`. */
  readonly jsonSchema?: JsonSchema;
  /** What the model is shown of a result (the AI SDK's `toModelOutput`). */
  readonly toModelOutput?: ToModelOutput;
  /** Strict schema adherence, for providers that support it. */
  readonly strict?: boolean;
  /** Attempts after the first when `execute` throws (default 0, at most 10):
   * only for a tool whose side effect is safe to repeat, or keyed on the
   * idempotency key. */
  readonly maxRetries?: number;
}

/** What `handoff()` takes. */
export interface HandoffOptions {
  /** The id of the agent that takes the conversation over. */
  readonly to: string;
  /** What the model is told the handoff is for. */
  readonly description?: string;
}

/** What a model is told about one tool: `callModel` needs no more. */
export interface ToolSpecification {
  readonly name: string;
  readonly description: string | undefined;
  readonly inputJsonSchema: JsonSchema;
  readonly title?: string;
  readonly strict?: boolean;
  readonly providerOptions?: Json;
  readonly inputExamples?: Json;
}

export interface ResolvedFunctionTool extends ToolSpecification {
  readonly kind: "function";
  readonly definition: AnyFunctionTool;
  /** An AI SDK `dynamicTool()`: a chat shows its calls as `dynamic-tool` parts. */
  readonly dynamic?: true;
}

export interface ResolvedHandoffTool extends ToolSpecification {
  readonly kind: "handoff";
  readonly to: string;
}

export type ResolvedTool = ResolvedFunctionTool | ResolvedHandoffTool;

/** Names every provider accepts: OpenAI and Anthropic allow
 * `[A-Za-z0-9_-]{1,64}`, Gemini also wants a letter or `_` first. */
export const toolNamePattern = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** The shortest maximum among providers (OpenAI, Gemini: 64 characters). */
export const toolNameLengthMax = 64;
/** OpenAI rejects more than 128 tools in one request; so do we, at
 * definition time rather than on the first model call. */
export const toolsPerAgentMax = 128;
/** Agent ids named by a handoff; generous, but bounded like every id. */
export const handoffTargetLengthMax = 256;

/** The input a model sends to a handoff tool: an optional note for the
 * agent taking over. */
export const handoffInputJsonSchema: JsonSchema = {
  type: "object",
  properties: {
    reason: { type: "string", description: "Why the conversation is handed off, for the agent taking over." },
  },
  additionalProperties: false,
};

/** Who a definition error is about: `tool()`/`handoff()` before the tool
 * has a key, `tool "search"` once it has one. */
type Subject = { readonly label: string; readonly name: string | undefined };

/** Phronomy's `tool()` options, and the keys of an AI SDK tool (`Tool` of
 * `ai` 7: its input hooks are accepted and not called, the loop does not
 * stream tool inputs). */
const toolOptionKeys = ["description", "inputSchema", "execute", "needsApproval", "jsonSchema", "toModelOutput", "strict", "maxRetries"] as const;
const functionToolKeys = [
  "kind",
  "type",
  ...toolOptionKeys,
  "title",
  "outputSchema",
  "providerOptions",
  "inputExamples",
  "metadata",
  "onInputStart",
  "onInputDelta",
  "onInputAvailable",
  "contextSchema",
  "deferLoading",
  "waitsFor",
  "waitsForEvent",
  "childAgent",
  "sleepsUntil",
  "waitTimeoutMs",
] as const;
/** The longest a wait may be set for (a timer's delay, a timeout): ten
 * years. Far above any agent's need, and far below where a due time in ms
 * stops being a safe integer. */
export const waitMsMax = 10 * 365 * 24 * 60 * 60 * 1000;
/** How many times a tool may be retried, at most. */
export const toolRetriesMax = 10;
const handoffToolKeys = ["kind", "to", "description"] as const;
const handoffOptionKeys = ["to", "description"] as const;

/** Defines a function tool. Checked at once (its key is not known yet) and
 * again by `resolveTools`, which names the key. */
export function tool<Schema extends StandardSchemaV1, Output>(
  options: ToolOptions<Schema, Output>,
): FunctionTool<StandardSchemaV1.InferOutput<Schema>, Output> {
  checkFunctionTool(options, { label: "tool()", name: undefined }, toolOptionKeys);
  return {
    kind: "function",
    description: options.description,
    inputSchema: options.inputSchema as StandardSchemaV1<unknown, StandardSchemaV1.InferOutput<Schema>>,
    execute: options.execute,
    needsApproval: options.needsApproval ?? false,
    jsonSchema: options.jsonSchema,
    ...(options.toModelOutput !== undefined ? { toModelOutput: options.toModelOutput } : {}),
    ...(options.strict !== undefined ? { strict: options.strict } : {}),
    ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
  };
}

/** Defines a handoff to another agent. The model sees it as a tool (named by
 * its key in the tool set) taking an optional `reason`. */
export function handoff(options: HandoffOptions): HandoffTool {
  checkHandoffTool(options, { label: "handoff()", name: undefined }, handoffOptionKeys);
  return { kind: "handoff", to: options.to, description: options.description };
}

/** Checks a whole tool set and fixes what each tool shows the model. Order
 * follows the set's own key order, so prompts are deterministic. */
export function resolveTools(tools: ToolSet | undefined): ResolvedTool[] {
  if (tools === undefined) return [];
  if (!isPlainObject(tools)) {
    throw new InvalidInputError("tools must be an object mapping tool names to tool(...) or handoff(...) definitions");
  }
  const names = Object.keys(tools);
  if (names.length > toolsPerAgentMax) {
    throw new InvalidInputError(`tools has ${names.length} entries; at most ${toolsPerAgentMax} are allowed (providers reject more): split the agent`);
  }
  return names.map((name) => resolveTool(name, tools[name]));
}

/** The ids a per-call error names, when the loop knows them. */
export interface ToolCallContext {
  readonly agentId?: string;
  readonly executionId?: string;
  readonly callId?: string;
}

/** Validates a model's input for a function tool against its schema and
 * returns the schema's output (with its defaults and transforms applied).
 * A schema whose validator throws (a broken refinement) propagates that
 * error unchanged. */
export async function validateToolInput<Input>(
  resolved: { readonly name: string; readonly definition: FunctionTool<Input, unknown> },
  input: unknown,
  context: ToolCallContext = {},
): Promise<Input> {
  return validateToolInputNow(resolved, input, context);
}

/** As `validateToolInput`, answered without a promise when the tool's
 * schema validates at once (`validateWithAnySchemaNow`): the loop checks
 * every tool call of every model answer. */
export function validateToolInputNow<Input>(
  resolved: { readonly name: string; readonly definition: FunctionTool<Input, unknown> },
  input: unknown,
  context: ToolCallContext = {},
): Input | Promise<Input> {
  const validation = validateWithAnySchemaNow(resolved.definition.inputSchema, input);
  return isThenable(validation)
    ? Promise.resolve(validation).then((answered) => toolInputOf<Input>(resolved, answered, context))
    : toolInputOf<Input>(resolved, validation, context);
}

function toolInputOf<Input>(resolved: { readonly name: string }, validation: SchemaValidation<unknown>, context: ToolCallContext): Input {
  if (validation.ok) return validation.value as Input;
  const issues = validation.issues;
  throw new InvalidInputError(
    `${callPrefix(context)}invalid input for tool "${resolved.name}": ${formatIssues(issues)}`,
    errorContext(context, { toolName: resolved.name, issues, paths: issues.map((issue) => issue.path) }),
  );
}

/** Whether one call of a function tool needs approval before it runs. A
 * predicate that throws is a `ToolFailedError`; one that answers anything
 * but a boolean is an `InvalidInputError` (approval must never be guessed). */
export async function toolNeedsApproval<Input>(
  resolved: { readonly name: string; readonly definition: FunctionTool<Input, unknown> },
  input: Input,
  context: ToolCallContext = {},
  options: ApprovalContext = { toolCallId: context.callId ?? "", messages: [], context: undefined, experimental_context: undefined },
): Promise<boolean> {
  const needsApproval = resolved.definition.needsApproval;
  if (typeof needsApproval === "boolean") return needsApproval;
  let answer: unknown;
  try {
    answer = await needsApproval(input, options);
  } catch (error) {
    throw new ToolFailedError(`${callPrefix(context)}tool "${resolved.name}": needsApproval threw (${messageOf(error)}); fix the predicate`, {
      ...errorContext(context, { toolName: resolved.name }),
      cause: error,
    });
  }
  if (typeof answer !== "boolean") {
    throw new InvalidInputError(
      `${callPrefix(context)}tool "${resolved.name}": needsApproval returned ${describe(answer)}; it must return true or false`,
      errorContext(context, { toolName: resolved.name, key: "needsApproval" }),
    );
  }
  return answer;
}

/** A tool's output as it is persisted and sent back: `undefined` becomes
 * null, anything else must already be JSON (plain objects, arrays, finite
 * numbers, strings, booleans, null) or it is a `ToolFailedError`. */
export function toolOutputToJson(toolName: string, callId: string, output: unknown, context: Omit<ToolCallContext, "callId"> = {}): Json {
  if (output === undefined) return null;
  if (isJson(output)) return output;
  throw new ToolFailedError(
    `${callPrefix(context)}tool "${toolName}" (call ${callId}) returned ${describe(output)}, which is not JSON-safe; `
      + "return plain objects, arrays, strings, finite numbers, booleans or null",
    errorContext({ ...context, callId }, { toolName }),
  );
}

/** Runs `execute`; an async iterable (the AI SDK's preliminary results)
 * counts by its last value. */
export async function executeTool(definition: AnyFunctionTool, input: unknown, context: ToolExecutionContext): Promise<unknown> {
  const result: unknown = await definition.execute(input, context);
  if (typeof result !== "object" || result === null || typeof (result as AsyncIterable<unknown>)[Symbol.asyncIterator] !== "function") {
    return result;
  }
  let last: unknown;
  for await (const value of result as AsyncIterable<unknown>) last = value;
  return last;
}

/** What the model is shown of a result when the tool has `toModelOutput`
 * (kept with the result, so a replay shows the same), else undefined. It
 * must be an AI SDK tool-result output (`{ type: "text" | "json" | "content"
 * | …, value }`) made of JSON. */
export async function toolModelOutput(
  definition: AnyFunctionTool,
  toolName: string,
  callId: string,
  input: unknown,
  output: unknown,
): Promise<Json | undefined> {
  if (definition.toModelOutput === undefined) return undefined;
  let converted: unknown;
  try {
    converted = await definition.toModelOutput({ toolCallId: callId, input, output });
  } catch (error) {
    throw new ToolFailedError(`tool "${toolName}" (call ${callId}): toModelOutput threw (${messageOf(error)})`, {
      cause: error,
      details: { toolName, callId },
    });
  }
  if (!isPlainObject(converted) || typeof converted.type !== "string" || !isJson(converted)) {
    throw new ToolFailedError(
      `tool "${toolName}" (call ${callId}): toModelOutput returned ${describe(converted)}; it must return a JSON tool-result `
        + 'output such as { type: "text", value: "…" }',
      { details: { toolName, callId } },
    );
  }
  return converted;
}

function resolveTool(name: string, definition: unknown): ResolvedTool {
  checkToolName(name);
  const subject: Subject = { label: `tool "${name}"`, name };
  if (!isPlainObject(definition)) {
    throw new InvalidInputError(`${subject.label} must be a tool(...) or handoff(...) definition, got ${describe(definition)}`, {
      details: { toolName: name },
    });
  }
  if (definition.kind === "handoff") return resolveHandoffTool(subject, name, definition);
  if (definition.kind !== "function" && definition.kind !== undefined) {
    throw invalidOption(subject, "kind", `must be "function" or "handoff", got ${describe(definition.kind)}`);
  }
  if (definition.type === "provider") {
    throw new InvalidInputError(
      `${subject.label} is a provider-executed tool (${describe(definition.id)}); Phronomy runs every tool call under `
        + "its own durable barrier, which a call the provider runs inside its answer never passes: use a function tool",
      { details: { toolName: name, key: "type" } },
    );
  }
  if (definition.type !== undefined && definition.type !== "function" && definition.type !== "dynamic") {
    throw invalidOption(subject, "type", `must be "function" or "dynamic", got ${describe(definition.type)}`);
  }
  return resolveFunctionTool(subject, name, definition);
}

function resolveFunctionTool(subject: Subject, name: string, definition: Record<string, unknown>): ResolvedFunctionTool {
  checkFunctionTool(definition, subject, functionToolKeys);
  const normalized = definition as unknown as Partial<AnyFunctionTool> & Pick<AnyFunctionTool, "execute">;
  const functionTool: AnyFunctionTool = {
    kind: "function",
    description: normalized.description,
    inputSchema: toolSchemaOf(definition.inputSchema) as AnyFunctionTool["inputSchema"],
    execute: normalized.execute,
    needsApproval: normalized.needsApproval ?? false,
    jsonSchema: normalized.jsonSchema,
    ...(normalized.toModelOutput !== undefined ? { toModelOutput: normalized.toModelOutput } : {}),
    ...(normalized.maxRetries !== undefined ? { maxRetries: normalized.maxRetries } : {}),
    ...(normalized.outputSchema !== undefined ? { outputSchema: normalized.outputSchema } : {}),
    ...(normalized.waitsFor !== undefined ? { waitsFor: normalized.waitsFor } : {}),
    ...(normalized.waitsForEvent !== undefined ? { waitsForEvent: normalized.waitsForEvent } : {}),
    ...(normalized.childAgent !== undefined ? { childAgent: normalized.childAgent } : {}),
    ...(normalized.sleepsUntil !== undefined ? { sleepsUntil: normalized.sleepsUntil } : {}),
    ...(normalized.waitTimeoutMs !== undefined ? { waitTimeoutMs: normalized.waitTimeoutMs } : {}),
  };
  const extras = {
    ...(normalized.title !== undefined ? { title: normalized.title } : {}),
    ...(normalized.strict !== undefined ? { strict: normalized.strict } : {}),
    ...(normalized.providerOptions !== undefined ? { providerOptions: normalized.providerOptions } : {}),
    ...(normalized.inputExamples !== undefined ? { inputExamples: normalized.inputExamples } : {}),
  };
  return {
    kind: "function",
    name,
    description: functionTool.description,
    inputJsonSchema: inputJsonSchemaOf(subject, functionTool),
    definition: functionTool,
    ...extras,
    ...(definition.type === "dynamic" ? { dynamic: true as const } : {}),
  };
}

function resolveHandoffTool(subject: Subject, name: string, definition: Record<string, unknown>): ResolvedHandoffTool {
  checkHandoffTool(definition, subject, handoffToolKeys);
  const to = definition.to as string;
  const description = (definition.description as string | undefined) ?? `Hand the conversation over to agent "${to}" when it is better placed to answer.`;
  return { kind: "handoff", name, description, inputJsonSchema: handoffInputJsonSchema, to };
}

/** An explicit `jsonSchema` wins; then the schema's own converter; then the
 * most permissive object schema (validation still runs on every call). */
function inputJsonSchemaOf(subject: Subject, functionTool: AnyFunctionTool): JsonSchema {
  const converted = functionTool.jsonSchema ?? convertOrExplain(subject, functionTool.inputSchema);
  const schema = converted ?? { type: "object" };
  if (schema.type !== undefined && schema.type !== "object") {
    throw invalidOption(
      subject,
      "inputSchema",
      `describes ${describe(schema.type)} input; models send tool inputs as JSON objects, so wrap it in an object schema`,
    );
  }
  return schema;
}

function convertOrExplain(subject: Subject, schema: StandardSchemaV1 | AiSdkSchema): JsonSchema | undefined {
  try {
    return isStandardSchema(schema) ? convertToJsonSchema(schema) : aiSdkJsonSchemaOf(schema);
  } catch (error) {
    throw new InvalidInputError(`${subject.label}: its inputSchema cannot be converted to JSON Schema (${messageOf(error)}); pass the jsonSchema option`, {
      cause: error,
      details: { toolName: subject.name ?? null, key: "inputSchema" },
    });
  }
}

function checkToolName(name: string): void {
  if (name.length === 0 || name.length > toolNameLengthMax || !toolNamePattern.test(name)) {
    throw new InvalidInputError(
      `tool name "${name}" is not accepted by model providers: use 1 to ${toolNameLengthMax} letters, digits, ` + "'_' or '-', starting with a letter or '_'",
      { details: { toolName: name } },
    );
  }
}

function checkFunctionTool(options: unknown, subject: Subject, allowedKeys: readonly string[]): void {
  if (!isPlainObject(options)) throw new InvalidInputError(`${subject.label} needs an options object, got ${describe(options)}`);
  rejectUnknownKeys(options, subject, allowedKeys);
  if (toolSchemaOf(options.inputSchema) === undefined) {
    throw invalidOption(
      subject,
      "inputSchema",
      `must be a Standard Schema (zod 4, valibot, arktype…) or an AI SDK schema (jsonSchema()), got ${describe(options.inputSchema)}`,
    );
  }
  if (typeof options.execute !== "function") {
    throw invalidOption(
      subject,
      "execute",
      "must be a function (input, { toolCallId, messages, abortSignal, idempotencyKey, executionId }) => output "
        + "(a tool without execute is answered by the client in the AI SDK; here every tool runs in the loop)",
    );
  }
  const maxRetries = options.maxRetries;
  if (maxRetries !== undefined && (typeof maxRetries !== "number" || !Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > toolRetriesMax)) {
    throw invalidOption(subject, "maxRetries", `must be an integer from 0 to ${toolRetriesMax}, got ${describe(maxRetries)}`);
  }
  for (const key of ["toModelOutput", "onInputStart", "onInputDelta", "onInputAvailable"]) {
    const value = options[key];
    if (value !== undefined && typeof value !== "function") throw invalidOption(subject, key, `must be a function, got ${describe(value)}`);
  }
  if (options.strict !== undefined && typeof options.strict !== "boolean") {
    throw invalidOption(subject, "strict", `must be a boolean, got ${describe(options.strict)}`);
  }
  for (const key of ["providerOptions", "inputExamples", "metadata"]) {
    const value = options[key];
    if (value !== undefined && !isJson(value)) throw invalidOption(subject, key, "must be plain JSON");
  }
  if (options.waitsFor !== undefined && !isStandardSchema(options.waitsFor)) {
    throw invalidOption(subject, "waitsFor", `must be a Standard Schema (zod, valibot, arktype, …), got ${describe(options.waitsFor)}`);
  }
  const event = options.waitsForEvent as { key?: unknown } | undefined;
  if (event !== undefined && (typeof event !== "object" || event === null || typeof event.key !== "function" || options.waitsFor === undefined)) {
    throw invalidOption(subject, "waitsForEvent", "must be { key: (input) => string, timeoutMs? } on a tool with waitsFor (use waitForEvent())");
  }
  if (options.sleepsUntil !== undefined && typeof options.sleepsUntil !== "function") {
    throw invalidOption(subject, "sleepsUntil", `must be a function of the input giving a Date or milliseconds from now, got ${describe(options.sleepsUntil)}`);
  }
  const timeout = options.waitTimeoutMs;
  if (timeout !== undefined && (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout < 0 || timeout > waitMsMax)) {
    throw invalidOption(subject, "waitTimeoutMs", `must be an integer of milliseconds from 0 to ${waitMsMax}, got ${describe(timeout)}`);
  }
  const needsApproval = options.needsApproval;
  if (needsApproval !== undefined && typeof needsApproval !== "boolean" && typeof needsApproval !== "function") {
    throw invalidOption(subject, "needsApproval", `must be a boolean or a function of the input, got ${describe(needsApproval)}`);
  }
  checkOptionalString(options, subject, "description");
  checkOptionalString(options, subject, "title");
  const jsonSchema = options.jsonSchema;
  if (jsonSchema !== undefined && (!isPlainObject(jsonSchema) || !isJson(jsonSchema))) {
    throw invalidOption(subject, "jsonSchema", "must be a JSON Schema object (plain JSON)");
  }
}

function checkHandoffTool(options: unknown, subject: Subject, allowedKeys: readonly string[]): void {
  if (!isPlainObject(options)) throw new InvalidInputError(`${subject.label} needs an options object, got ${describe(options)}`);
  rejectUnknownKeys(options, subject, allowedKeys);
  const to = options.to;
  if (typeof to !== "string" || to.length === 0 || to.length > handoffTargetLengthMax) {
    throw invalidOption(subject, "to", `must be the id of the agent to hand off to (1 to ${handoffTargetLengthMax} characters)`);
  }
  checkOptionalString(options, subject, "description");
}

function checkOptionalString(options: Record<string, unknown>, subject: Subject, key: string): void {
  const value = options[key];
  if (value !== undefined && typeof value !== "string") {
    throw invalidOption(subject, key, `must be a string, got ${describe(value)}`);
  }
}

function rejectUnknownKeys(options: Record<string, unknown>, subject: Subject, allowedKeys: readonly string[]): void {
  const unknownKey = Object.keys(options).find((key) => !allowedKeys.includes(key));
  if (unknownKey === undefined) return;
  throw invalidOption(subject, unknownKey, `is not an option; the options are ${allowedKeys.join(", ")}`);
}

function callPrefix(context: ToolCallContext): string {
  return context.executionId === undefined ? "" : `execution ${context.executionId}: `;
}

function errorContext(context: ToolCallContext, details: Record<string, unknown>): ErrorContext {
  const callDetails = context.callId === undefined ? details : { ...details, callId: context.callId };
  return { agentId: context.agentId, executionId: context.executionId, details: callDetails };
}

function invalidOption(subject: Subject, key: string, problem: string): InvalidInputError {
  const details = subject.name === undefined ? { key } : { toolName: subject.name, key };
  return new InvalidInputError(`${subject.label}: "${key}" ${problem}`, { details });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "function") return "a function";
  if (typeof value === "object") {
    const className = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof className === "string" && className !== "Object" ? `a ${className}` : "an object";
  }
  return `${typeof value} ${String(value)}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
