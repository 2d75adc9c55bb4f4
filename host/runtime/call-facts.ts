// What a model call's durable response records of how the call was made
// (docs/decisions/0083): the model id, the settings that are plain values
// (temperature, max output tokens, …; never headers or provider options,
// which may carry keys), how many attempts it took, how many messages were
// sent, and the system prompt — only when it differs from the one this
// session recorded last, so a loop of calls stores it once. A person reads
// them in the dashboard's waterfall; nothing decides on them.

import type { CallOverrides } from "../agent/model.js";
import type { Json } from "../store/records.js";
import { modelIdOf } from "./gen-ai-attributes.js";
import type { AgentSettings } from "./options.js";

/** Characters of a system prompt a response records at most. */
export const recordedSystemMax = 4_000;

const plainSettingKeys = ["maxOutputTokens", "temperature", "topP", "topK", "presencePenalty", "frequencyPenalty", "seed", "stopSequences"] as const;

export interface CallFacts {
  /** Merged into the `model_response` payload. */
  readonly recorded: { readonly [key: string]: Json };
  /** The system prompt sent (to compare with the next call's). */
  readonly system: string | undefined;
}

export function callFactsOf(
  definition: AgentSettings,
  overrides: CallOverrides | undefined,
  call: { readonly attempts: number; readonly messagesSent: number; readonly systemRecorded: string | undefined },
): CallFacts {
  const settings: { [key: string]: Json } = {};
  for (const key of plainSettingKeys) {
    const value = definition[key];
    if (typeof value === "number" || (Array.isArray(value) && value.every((entry) => typeof entry === "string"))) settings[key] = value as Json;
  }
  if (typeof definition.toolChoice === "string") settings["toolChoice"] = definition.toolChoice;
  if (typeof overrides?.toolChoice === "string") settings["toolChoice"] = overrides.toolChoice;
  if (overrides?.activeTools !== undefined) settings["activeTools"] = [...overrides.activeTools];
  const system = overrides?.system ?? definition.instructions;
  const recorded: { [key: string]: Json } = {
    model: modelIdOf(overrides?.model ?? definition.model),
    settings,
    attempts: Math.max(1, call.attempts),
    messagesSent: call.messagesSent,
  };
  if (system !== undefined && system !== call.systemRecorded) {
    recorded["system"] = system.length > recordedSystemMax ? system.slice(0, recordedSystemMax) : system;
    if (system.length > recordedSystemMax) recorded["systemChars"] = system.length;
  }
  return { recorded, system };
}
