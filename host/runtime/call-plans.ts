// What an execution's model calls change of its definition's options
// (docs/decisions/0071): the start's AI SDK settings (a model id, provider
// options, `experimental_context`), the definition's `prepareCall` given
// the start's call `options`, and before each model call its
// `prepareStep`. A session works its plan out once — eagerly, since a
// recovered tool batch may run before any model call — and every call of
// a definition with none of these settings passes no overrides at all.

import type { ModelMessage } from "ai";
import type { ConversationMessage } from "../agent/messages.js";
import type { CallOverrides, LanguageModel } from "../agent/model.js";
import { toModelMessages } from "../agent/model-messages.js";
import { PhronomyError } from "../errors.js";
import type { Json } from "../store/records.js";
import type { AgentStep, LoopSettings, PrepareCallOptions, PrepareCallResult, PrepareStepResult, ToolChoice } from "./loop-settings.js";
import type { ModelSettings } from "./model-settings.js";
import type { StartCallSettings } from "./start-call-settings.js";

/** A session's model calls' changes, and the context its tools get. */
export interface CallPlan {
  /** Over the definition's options on every call; undefined: none. */
  readonly overrides: CallOverrides | undefined;
  /** Handed to every tool as `experimental_context`. */
  readonly experimentalContext: unknown;
}

type ProviderOptions = { readonly [provider: string]: { readonly [key: string]: Json } };
type PlannedDefinition = ModelSettings & { readonly model: LanguageModel; readonly instructions?: string; readonly experimental_context?: unknown };

/** The plan of a session: synchronous unless the definition has a
 * `prepareCall` (which may be async). */
export function callPlanOf(definition: PlannedDefinition, start: StartCallSettings): CallPlan | Promise<CallPlan> {
  const plain =
    definition.prepareCall === undefined && start.model === undefined && start.providerOptions === undefined && start.experimental_context === undefined;
  if (plain) return plainPlanOf(definition);
  const experimentalContext = start.experimental_context ?? definition.experimental_context;
  const providerOptions = mergedProviderOptions(definition.providerOptions as ProviderOptions | undefined, start.providerOptions);
  if (definition.prepareCall === undefined) {
    if (start.model === undefined && start.providerOptions === undefined) return { overrides: undefined, experimentalContext };
    return {
      overrides: { ...(start.model !== undefined ? { model: start.model } : {}), ...(start.providerOptions !== undefined ? { providerOptions } : {}) },
      experimentalContext,
    };
  }
  const prepareCall = definition.prepareCall;
  const given = {
    options: start.options,
    model: start.model ?? definition.model,
    instructions: definition.instructions,
    toolChoice: definition.toolChoice,
    activeTools: definition.activeTools,
    providerOptions,
    experimental_context: experimentalContext,
  };
  return Promise.resolve()
    .then(() => prepareCall(given))
    .then(
      (answer) => planFromPrepareCall(given, answer),
      (error: unknown) => {
        throw settingFailed("prepareCall", error);
      },
    );
}

/** The plan of a start that changes nothing: one per definition. */
const plainPlans = new WeakMap<object, CallPlan>();

function plainPlanOf(definition: PlannedDefinition): CallPlan {
  let plan = plainPlans.get(definition);
  if (plan === undefined) {
    plan = Object.freeze({ overrides: undefined, experimentalContext: definition.experimental_context });
    plainPlans.set(definition, plan);
  }
  return plan;
}

function planFromPrepareCall(given: PrepareCallOptions, answer: PrepareCallResult | undefined): CallPlan {
  const result: PrepareCallResult = answer ?? {};
  const instructions = result.instructions ?? result.system ?? given.instructions;
  const toolChoice = result.toolChoice ?? given.toolChoice;
  const overrides: CallOverrides = {
    model: result.model ?? given.model,
    ...(instructions !== undefined ? { system: instructions } : {}),
    ...(toolChoice !== undefined ? { toolChoice } : {}),
    ...((result.activeTools ?? given.activeTools) ? { activeTools: result.activeTools ?? given.activeTools } : {}),
    ...((result.providerOptions ?? given.providerOptions) ? { providerOptions: result.providerOptions ?? given.providerOptions } : {}),
  };
  return { overrides, experimentalContext: "experimental_context" in result ? result.experimental_context : given.experimental_context };
}

/** What `prepareStep` changes of the next model call, over the plan's. */
export async function stepOverridesOf(
  settings: LoopSettings & { readonly model: LanguageModel; readonly instructions?: string },
  plan: CallPlan,
  steps: AgentStep[],
  conversation: readonly ConversationMessage[],
  options: Json | undefined,
): Promise<CallOverrides | undefined> {
  const prepareStep = settings.prepareStep;
  if (prepareStep === undefined) return plan.overrides;
  const messages = toModelMessages(conversation);
  const model = plan.overrides?.model ?? settings.model;
  const instructions = plan.overrides?.system ?? settings.instructions;
  let answer: PrepareStepResult | undefined;
  try {
    answer = await prepareStep({ steps: [...steps], stepNumber: steps.length, model, messages, instructions, options });
  } catch (error) {
    throw settingFailed("prepareStep", error);
  }
  if (answer === undefined || answer === null) return plan.overrides;
  return stepOverrides(plan.overrides, answer);
}

function stepOverrides(base: CallOverrides | undefined, answer: PrepareStepResult): CallOverrides {
  const system = answer.instructions ?? answer.system;
  const toolChoice: ToolChoice | undefined = answer.toolChoice;
  return {
    ...base,
    ...(answer.model !== undefined ? { model: answer.model } : {}),
    ...(system !== undefined ? { system } : {}),
    ...(toolChoice !== undefined ? { toolChoice } : {}),
    ...(answer.activeTools !== undefined ? { activeTools: answer.activeTools } : {}),
    ...(answer.providerOptions !== undefined ? { providerOptions: answer.providerOptions } : {}),
    ...(answer.messages !== undefined ? { messages: answer.messages as ModelMessage[] } : {}),
  };
}

/** The start's provider options over the definition's, provider by provider. */
function mergedProviderOptions(definition: ProviderOptions | undefined, start: ProviderOptions | undefined): ProviderOptions | undefined {
  if (start === undefined) return definition;
  if (definition === undefined) return start;
  const merged: Record<string, { readonly [key: string]: Json }> = { ...definition };
  for (const [provider, options] of Object.entries(start)) merged[provider] = { ...definition[provider], ...options };
  return merged;
}

/** One of the definition's loop settings threw: the execution fails with
 * `STREAM_CALLBACK`, the setting named, its error the cause. */
export function settingFailed(setting: string, error: unknown): PhronomyError {
  if (error instanceof PhronomyError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new PhronomyError("STREAM_CALLBACK", `the agent's ${setting} threw: ${message}`, { cause: error, details: { setting } });
}
