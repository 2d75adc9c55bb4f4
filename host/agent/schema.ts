// Standard Schema (v1, https://standardschema.dev) at the edge of the agent
// loop: recognising a schema, running its validation (which may be async),
// turning its issues into readable paths, and deriving the JSON Schema a
// model is shown. Nothing here imports a schema library: zod, valibot and
// arktype are all recognised by shape. JSON Schema converters are tried in
// this order: Standard JSON Schema (`~standard.jsonSchema`, spec 1.1), then a
// zod 4 style `toJSONSchema()` method; callers fall back to an explicit schema
// or to `{ type: "object" }` when neither exists.

import type { StandardJSONSchemaV1, StandardSchemaV1 } from "@standard-schema/spec";
import type { Json } from "../words.js";
import { isJson } from "./messages.js";

/** A JSON Schema document as plain JSON. */
export type JsonSchema = { [key: string]: Json };

/** One validation problem, with its path as plain JSON (symbols become
 * strings) so it can ride in an error's details. */
export type SchemaIssue = { path: (string | number)[]; message: string };

export type SchemaValidation<Output> = { readonly ok: true; readonly value: Output } | { readonly ok: false; readonly issues: SchemaIssue[] };

/** The JSON Schema dialect asked of converters: the one the AI SDK provider
 * interface types its tool schemas with (`JSONSchema7`). */
export const jsonSchemaTarget = "draft-07";

/** How many issues an error message spells out; the rest are counted. A
 * model can send an input that breaks every field of a large schema. */
export const issuesInMessageMax = 8;

export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  const properties = (value as { "~standard"?: unknown })["~standard"];
  if (typeof properties !== "object" || properties === null) return false;
  const { version, validate } = properties as { version?: unknown; validate?: unknown };
  return version === 1 && typeof validate === "function";
}

/** Runs the schema's own validation. A validator that throws is a bug in the
 * schema (or a refinement), so its error propagates unchanged. */
export async function validateWithSchema<Schema extends StandardSchemaV1>(
  schema: Schema,
  value: unknown,
): Promise<SchemaValidation<StandardSchemaV1.InferOutput<Schema>>> {
  return standardValidation(await schema["~standard"].validate(value)) as SchemaValidation<StandardSchemaV1.InferOutput<Schema>>;
}

/** `items[0].name`; the empty path (the value itself) reads `(input)`. */
export function formatIssuePath(path: readonly (string | number)[]): string {
  if (path.length === 0) return "(input)";
  return path.map((key, index) => (typeof key === "number" ? `[${key}]` : index === 0 ? key : `.${key}`)).join("");
}

/** `q: Required; items[0]: Expected number (and 3 more issues)`. */
export function formatIssues(issues: readonly SchemaIssue[]): string {
  const shown = issues.slice(0, issuesInMessageMax).map((issue) => `${formatIssuePath(issue.path)}: ${issue.message}`);
  const hidden = issues.length - shown.length;
  return hidden > 0 ? `${shown.join("; ")} (and ${hidden} more issues)` : shown.join("; ");
}

/** The JSON Schema of a schema's *input* side (what a model must send), or
 * `undefined` when the schema offers no converter. A converter that throws
 * (a transform JSON Schema cannot express) or returns something that is not
 * JSON propagates as an error for the caller to name. */
export function convertToJsonSchema(schema: StandardSchemaV1): JsonSchema | undefined {
  const converted = convertWithStandardJsonSchema(schema) ?? convertWithZodMethod(schema);
  if (converted === undefined) return undefined;
  if (!isJson(converted) || typeof converted !== "object" || converted === null || Array.isArray(converted)) {
    throw new TypeError("the schema's JSON Schema converter returned a value that is not a JSON object");
  }
  return converted;
}

/** A schema's conversion, kept by schema (null: it offers no converter).
 * A wait's response schema is converted at every suspension on it — ≈58
 * µs of zod's converter each, a tenth of a suspension (decision 0085) —
 * and a schema is an immutable value, so one conversion serves them all. */
const convertedBySchema = new WeakMap<StandardSchemaV1, JsonSchema | null>();

/** `convertToJsonSchema`, converted once per schema and frozen: every
 * request that carries it shares the one object. A converter that throws
 * is asked again next time (and throws again). */
export function jsonSchemaOnce(schema: StandardSchemaV1): JsonSchema | undefined {
  const kept = convertedBySchema.get(schema);
  if (kept !== undefined) return kept ?? undefined;
  const converted = convertToJsonSchema(schema);
  convertedBySchema.set(schema, converted === undefined ? null : deepFrozen(converted));
  return converted;
}

function deepFrozen<Value>(value: Value): Value {
  if (typeof value === "object" && value !== null) for (const inner of Object.values(value)) deepFrozen(inner);
  return Object.freeze(value);
}

function convertWithStandardJsonSchema(schema: StandardSchemaV1): unknown {
  const properties = schema["~standard"] as Partial<StandardJSONSchemaV1.Props>;
  const converter = properties.jsonSchema;
  if (typeof converter !== "object" || converter === null || typeof converter.input !== "function") return undefined;
  return converter.input({ target: jsonSchemaTarget });
}

/** zod 4 schemas (before Standard JSON Schema, and as a second chance) carry
 * a `toJSONSchema(params)` method next to their `_zod` internals. */
function convertWithZodMethod(schema: StandardSchemaV1): unknown {
  const candidate = schema as { _zod?: unknown; toJSONSchema?: unknown };
  if (candidate._zod === undefined || typeof candidate.toJSONSchema !== "function") return undefined;
  return (candidate.toJSONSchema as (params: { io: "input" }) => unknown).call(schema, { io: "input" });
}

function plainIssue(issue: StandardSchemaV1.Issue): SchemaIssue {
  const path = (issue.path ?? []).map((segment) => {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    return typeof key === "number" ? key : String(key);
  });
  return { path, message: issue.message };
}

// -- the AI SDK's own schemas (`jsonSchema()`, `zodSchema()`, lazy ones) -----

const aiSdkSchemaSymbol = Symbol.for("vercel.ai.schema");

/** The AI SDK's `Schema`: a JSON Schema with an optional validator. */
export interface AiSdkSchema {
  /** The JSON Schema the model is shown. */
  readonly jsonSchema: unknown;
  /** Validates a value against the schema (the AI SDK's result shape). */
  readonly validate?: (value: unknown) => unknown;
}

export function isAiSdkSchema(value: unknown): value is AiSdkSchema {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[aiSdkSchemaSymbol] === true && "jsonSchema" in value;
}

/** A tool's input schema in any form the AI SDK's `tool()` takes: a
 * Standard Schema (zod, valibot, arktype), an AI SDK `Schema`
 * (`jsonSchema()`, `zodSchema()`), or a lazy schema (a function returning
 * one). `undefined` when it is none of them. */
export function toolSchemaOf(value: unknown): StandardSchemaV1 | AiSdkSchema | undefined {
  if (isStandardSchema(value)) return value;
  if (isAiSdkSchema(value)) return value;
  if (typeof value === "function" && value.length === 0) {
    const created: unknown = (value as () => unknown)();
    if (isAiSdkSchema(created) || isStandardSchema(created)) return created;
  }
  return undefined;
}

/** Runs an AI SDK schema's validator (none: every value passes). */
export async function validateWithAnySchema(schema: StandardSchemaV1 | AiSdkSchema, value: unknown): Promise<SchemaValidation<unknown>> {
  return validateWithAnySchemaNow(schema, value);
}

/** As `validateWithAnySchema`, answered without a promise when the
 * schema's validator answers at once (zod's, valibot's, an AI SDK
 * `jsonSchema` without `validate`): every tool call's input is checked at
 * each model answer, and three async frames a call were most of that
 * check's allocation. A validator's own promise (or thenable) is awaited
 * as before; one that throws throws here. */
export function validateWithAnySchemaNow(
  schema: StandardSchemaV1 | AiSdkSchema,
  value: unknown,
): SchemaValidation<unknown> | Promise<SchemaValidation<unknown>> {
  if (isStandardSchema(schema)) {
    const result = schema["~standard"].validate(value);
    return isThenable(result) ? Promise.resolve(result).then(standardValidation) : standardValidation(result);
  }
  if (schema.validate === undefined) return { ok: true, value };
  const result: unknown = schema.validate(value);
  return isThenable(result) ? Promise.resolve(result).then(aiSdkValidation) : aiSdkValidation(result);
}

function standardValidation(result: StandardSchemaV1.Result<unknown>): SchemaValidation<unknown> {
  if (result.issues === undefined) return { ok: true, value: result.value };
  return { ok: false, issues: result.issues.map(plainIssue) };
}

function aiSdkValidation(answer: unknown): SchemaValidation<unknown> {
  const result = answer as { success?: unknown; value?: unknown; error?: unknown };
  if (result.success === true) return { ok: true, value: result.value };
  const error = result.error;
  return { ok: false, issues: [{ path: [], message: error instanceof Error ? error.message : String(error) }] };
}

/** What `await` would adopt: an object or function with a `then` method. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** The JSON Schema of an AI SDK schema (read now: a schema whose JSON
 * Schema is a promise cannot be shown to a model defined synchronously). */
export function aiSdkJsonSchemaOf(schema: AiSdkSchema): JsonSchema {
  const converted = schema.jsonSchema;
  if (typeof (converted as PromiseLike<unknown> | undefined)?.then === "function") {
    throw new TypeError("its JSON Schema is a promise; pass the JSON Schema itself to jsonSchema()");
  }
  if (!isJson(converted) || typeof converted !== "object" || converted === null || Array.isArray(converted)) {
    throw new TypeError("its JSON Schema is not a JSON object");
  }
  return converted;
}
