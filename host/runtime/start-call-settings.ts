// The AI SDK settings one start may give beside the agent's (issue 27 item
// 5): `providerOptions`, `model`, `experimental_context` and the call
// `options` of a definition with a `callOptionsSchema` (docs/decisions/0071).
// Every one of them is kept with the execution (its `config`), because a
// recovery after a restart, a resume days later, a queued message and a
// start filed for another process must run with what the start gave. So a
// value that cannot be stored as JSON is refused here, with the reason,
// and a model is taken per start only as a model id the environment can
// resolve again.

import { InvalidInputError } from "../errors.js";
import { isJson } from "../agent/messages.js";
import { assertLanguageModel } from "../agent/model.js";
import type { Json } from "../store/records.js";
import { formatIssues, toolSchemaOf, validateWithAnySchema } from "../agent/schema.js";

/** The per-start AI SDK settings (members of `StartOptions`). */
export interface StartCallSettings {
  /** Provider options of this execution's model calls, merged over the
   * agent's by provider (`{ openai: { … } }`). JSON: stored with the
   * execution. */
  readonly providerOptions?: { readonly [provider: string]: { readonly [key: string]: Json } };
  /** This execution's model, as a model id string (`"openai/gpt-5"`)
   * resolved as the agent's would be. A model object is refused: it cannot
   * be stored, and a recovery after a restart must call the same model. */
  readonly model?: string;
  /** Handed to every tool as `experimental_context` instead of the
   * agent's. JSON: stored with the execution, so a recovered tool gets it. */
  readonly experimental_context?: Json;
  /** The call options of a definition with a `callOptionsSchema`,
   * validated against it, stored with the execution and handed to its
   * `prepareCall` (as the AI SDK's `ToolLoopAgent` takes them). */
  readonly options?: Json;
}

export const START_CALL_SETTING_KEYS = ["providerOptions", "model", "experimental_context", "options"] as const;

/** The sentence every refusal of a per-start value ends with. */
const whyStored = "it is kept with the execution so that a recovery after a restart runs with it";

/** Checks the per-start settings of a start's options (`what` names the start). */
export function checkStartCallSettings(options: StartCallSettings, what: string): void {
  const { providerOptions, model, experimental_context: context, options: callOptions } = options;
  if (providerOptions !== undefined && (!isPlainObject(providerOptions) || !isJson(providerOptions))) {
    throw new InvalidInputError(`${what}: "providerOptions" must be a JSON object keyed by provider ({ openai: { … } }): ${whyStored}`);
  }
  if (model !== undefined) {
    if (typeof model !== "string") {
      throw new InvalidInputError(
        `${what}: "model" must be a model id string per start (e.g. "openai/gpt-5"): ${whyStored}, and a model object cannot be stored; `
          + "define an agent with the model object, or choose it per step in the definition's prepareStep",
        { details: { key: "model" } },
      );
    }
    assertLanguageModel(model);
  }
  if (context !== undefined && !isJson(context)) {
    throw new InvalidInputError(
      `${what}: "experimental_context" must be JSON per start: ${whyStored}, and a function, class instance or client cannot be stored; `
        + "give such a value in the agent definition's experimental_context",
      { details: { key: "experimental_context" } },
    );
  }
  if (callOptions !== undefined && !isJson(callOptions)) {
    throw new InvalidInputError(`${what}: "options" must be JSON: ${whyStored}`, { details: { key: "options" } });
  }
}

/** Validates a start's call `options` against its definition's
 * `callOptionsSchema`: refused without a schema to read them, or when
 * the schema refuses them (the issues named). */
export async function checkCallOptions(definition: { readonly callOptionsSchema?: unknown }, options: Json | undefined, what: string): Promise<void> {
  const schema = definition.callOptionsSchema === undefined ? undefined : toolSchemaOf(definition.callOptionsSchema);
  if (schema === undefined) {
    throw new InvalidInputError(`${what}: "options" are the call options of an agent with a callOptionsSchema, and this agent has none`, {
      details: { key: "options" },
    });
  }
  const validation = await validateWithAnySchema(schema, options);
  if (!validation.ok) {
    throw new InvalidInputError(`${what}: "options" do not match the agent's callOptionsSchema: ${formatIssues(validation.issues)}`, {
      details: { key: "options", issues: validation.issues },
    });
  }
}

/** The per-start settings as the execution's config stores them. */
export function configOfStartCallSettings(options: StartCallSettings, config: { [key: string]: Json }): void {
  if (options.providerOptions !== undefined) config.providerOptions = options.providerOptions as Json;
  if (options.model !== undefined) config.model = options.model;
  if (options.experimental_context !== undefined) config.experimental_context = options.experimental_context;
  if (options.options !== undefined) config.callOptions = options.options;
}

/** The per-start settings a stored config holds (recovery, a queued
 * message, a suspended execution read back). */
export function startCallSettingsOf(config: { readonly [key: string]: Json }): StartCallSettings {
  const providerOptions = config["providerOptions"];
  const model = config["model"];
  return {
    ...(isPlainObject(providerOptions) ? { providerOptions: providerOptions as StartCallSettings["providerOptions"] } : {}),
    ...(typeof model === "string" ? { model } : {}),
    ...(config["experimental_context"] !== undefined ? { experimental_context: config["experimental_context"] } : {}),
    ...(config["callOptions"] !== undefined ? { options: config["callOptions"] } : {}),
  };
}

/** The start's settings a suspended execution keeps for its resume. */
export function keptStartCallSettings(options: StartCallSettings): StartCallSettings {
  const { providerOptions, model, experimental_context: context, options: callOptions } = options;
  return {
    ...(providerOptions !== undefined ? { providerOptions } : {}),
    ...(model !== undefined ? { model } : {}),
    ...(context !== undefined ? { experimental_context: context } : {}),
    ...(callOptions !== undefined ? { options: callOptions } : {}),
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
