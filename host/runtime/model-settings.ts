// Checks of the AI SDK settings an agent definition carries (call
// settings, structured output, retries), and the pieces of a definition
// each model call passes on. Bad values are refused when the agent is
// defined, not on its first model call.

import { InvalidInputError } from "../errors.js";
import { isJson } from "../agent/messages.js";
import { MODEL_CALL_SETTING_KEYS, type LoopCallSettings, type ModelCallSettings } from "../agent/model.js";
import { RETRIES_MAX, type RetrySettings } from "../agent/retries.js";
import { PASSED_LOOP_SETTING_KEYS, type LoopSettings } from "./loop-settings.js";

/** The members of an agent definition (`AgentSettings`, options.ts) these
 * checks and the model call read. Declared here, not imported, because
 * options.ts calls `checkModelSettings` while checking a definition. */
export interface ModelSettings extends ModelCallSettings, LoopSettings {
  readonly output?: unknown;
  readonly maxRetries?: number;
  readonly retryDelay?: { readonly initialMs?: number; readonly maxMs?: number };
  readonly toolsContext?: { readonly [toolName: string]: unknown };
}

const numberKeys = ["temperature", "topP", "topK", "presencePenalty", "frequencyPenalty"] as const;
const integerKeys = ["maxOutputTokens", "seed"] as const;

export function checkModelSettings(definition: Partial<ModelSettings>, what: string): void {
  for (const key of numberKeys) {
    const value = definition[key];
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value))) {
      throw new InvalidInputError(`${what}: "${key}" must be a finite number, got ${String(value)}`);
    }
  }
  for (const key of integerKeys) {
    const value = definition[key];
    if (value !== undefined && (typeof value !== "number" || !Number.isSafeInteger(value) || (key === "maxOutputTokens" && value < 1))) {
      throw new InvalidInputError(`${what}: "${key}" must be ${key === "seed" ? "an integer" : "a positive integer"}, got ${String(value)}`);
    }
  }
  const { stopSequences, headers, providerOptions, output, maxRetries, retryDelay, toolsContext } = definition;
  if (toolsContext !== undefined && !isPlainObject(toolsContext)) {
    throw new InvalidInputError(`${what}: "toolsContext" must map tool names to each tool's context`);
  }
  if (stopSequences !== undefined && (!Array.isArray(stopSequences) || !stopSequences.every((item) => typeof item === "string"))) {
    throw new InvalidInputError(`${what}: "stopSequences" must be an array of strings`);
  }
  if (headers !== undefined && (!isPlainObject(headers) || !Object.values(headers).every((item) => item === undefined || typeof item === "string"))) {
    throw new InvalidInputError(`${what}: "headers" must map header names to strings`);
  }
  if (providerOptions !== undefined && (!isPlainObject(providerOptions) || !isJson(providerOptions))) {
    throw new InvalidInputError(`${what}: "providerOptions" must be a JSON object keyed by provider ({ openai: { … } })`);
  }
  if (output !== undefined && (typeof output !== "object" || output === null || !("parseCompleteOutput" in output))) {
    throw new InvalidInputError(`${what}: "output" must be an AI SDK Output (Output.object({ schema }) from "ai")`);
  }
  if (maxRetries !== undefined && (typeof maxRetries !== "number" || !Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > RETRIES_MAX)) {
    throw new InvalidInputError(`${what}: "maxRetries" must be an integer from 0 to ${RETRIES_MAX}, got ${String(maxRetries)}`);
  }
  if (retryDelay !== undefined) {
    if (!isPlainObject(retryDelay)) throw new InvalidInputError(`${what}: "retryDelay" must be { initialMs?, maxMs? }`);
    for (const [key, value] of Object.entries(retryDelay)) {
      if (key !== "initialMs" && key !== "maxMs") throw new InvalidInputError(`${what}: "retryDelay" has no option "${key}"; the options are initialMs, maxMs`);
      if (value !== undefined && (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 3_600_000)) {
        throw new InvalidInputError(`${what}: "retryDelay.${key}" must be an integer from 0 to 3,600,000 ms, got ${String(value)}`);
      }
    }
  }
}

/** Each definition's call settings, built at its first model call: a
 * definition is checked once, when defined, and read as it was then
 * (decision 0067), so every call of every run passes the same object. */
const callSettingsByDefinition = new WeakMap<ModelSettings, ModelCallSettings & LoopCallSettings>();

/** The call settings a definition gives, as the model call takes them:
 * its provider settings and the `generateText` settings passed as they
 * are (`toolChoice`, `activeTools`, `experimental_repairToolCall`,
 * `timeout`, and `experimental_telemetry` as AI SDK 7's `telemetry`). */
export function callSettingsOf(definition: ModelSettings): ModelCallSettings & LoopCallSettings {
  let settings = callSettingsByDefinition.get(definition);
  if (settings === undefined) {
    settings = buildCallSettings(definition);
    callSettingsByDefinition.set(definition, settings);
  }
  return settings;
}

function buildCallSettings(definition: ModelSettings): ModelCallSettings & LoopCallSettings {
  const settings: Record<string, unknown> = {};
  for (const key of [...MODEL_CALL_SETTING_KEYS, ...PASSED_LOOP_SETTING_KEYS]) {
    if (definition[key] !== undefined) settings[key] = definition[key];
  }
  // AI SDK 7's name of the setting, passed as the name every version reads.
  if (definition.repairToolCall !== undefined) settings.experimental_repairToolCall = definition.repairToolCall;
  if (definition.experimental_telemetry !== undefined) settings.telemetry = definition.experimental_telemetry;
  return Object.freeze(settings) as ModelCallSettings & LoopCallSettings;
}

/** Each definition's retry settings for its model calls, as above. */
const modelRetrySettingsByDefinition = new WeakMap<ModelSettings, RetrySettings>();

/** Retry settings of a definition's model calls (its `maxRetries`). */
export function modelRetrySettingsOf(definition: ModelSettings): RetrySettings {
  let settings = modelRetrySettingsByDefinition.get(definition);
  if (settings === undefined) {
    settings = Object.freeze(retrySettingsOf(definition, definition.maxRetries));
    modelRetrySettingsByDefinition.set(definition, settings);
  }
  return settings;
}

/** Retry settings of model calls (`maxRetries` of the definition) or of
 * a tool (its own `maxRetries`, 0 by default). */
export function retrySettingsOf(definition: ModelSettings, maxRetries: number | undefined): RetrySettings {
  return {
    ...(maxRetries !== undefined ? { maxRetries } : {}),
    ...(definition.retryDelay?.initialMs !== undefined ? { initialDelayMs: definition.retryDelay.initialMs } : {}),
    ...(definition.retryDelay?.maxMs !== undefined ? { maxDelayMs: definition.retryDelay.maxMs } : {}),
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
