// OpenTelemetry attributes of the GenAI semantic conventions
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/) for the spans of an
// execution, a model call and a tool call. Only attributes whose value is
// known are set; message contents are never recorded (they may be private).

import type { ModelTurn } from "../agent/messages.js";
import type { LanguageModel } from "../agent/model.js";
import type { AgentSettings } from "./options.js";
import type { Attributes } from "./tracing.js";

export function modelIdOf(model: LanguageModel): string {
  return typeof model === "string" ? model : model.modelId;
}

function providerOf(model: LanguageModel): string | undefined {
  if (typeof model === "string") return model.includes("/") ? model.slice(0, model.indexOf("/")) : undefined;
  return model.provider;
}

/** `invoke_agent`: the agent and the model it calls. */
export function agentAttributes(agentId: string, definition: AgentSettings): Attributes {
  const provider = providerOf(definition.model);
  return {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": agentId,
    "gen_ai.request.model": modelIdOf(definition.model),
    ...(provider !== undefined ? { "gen_ai.provider.name": provider } : {}),
  };
}

/** `chat`: the model and the settings it was called with. */
export function modelRequestAttributes(definition: AgentSettings): Attributes {
  const provider = providerOf(definition.model);
  const attributes: Attributes = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": modelIdOf(definition.model),
    ...(provider !== undefined ? { "gen_ai.provider.name": provider } : {}),
  };
  const numbers: [string, number | undefined][] = [
    ["gen_ai.request.temperature", definition.temperature],
    ["gen_ai.request.max_tokens", definition.maxOutputTokens],
    ["gen_ai.request.top_p", definition.topP],
    ["gen_ai.request.top_k", definition.topK],
    ["gen_ai.request.presence_penalty", definition.presencePenalty],
    ["gen_ai.request.frequency_penalty", definition.frequencyPenalty],
    ["gen_ai.request.seed", definition.seed],
  ];
  for (const [key, value] of numbers) if (value !== undefined) attributes[key] = value;
  if (definition.stopSequences !== undefined) attributes["gen_ai.request.stop_sequences"] = [...definition.stopSequences];
  if (definition.output !== undefined) attributes["gen_ai.output.type"] = "json";
  return attributes;
}

/** What the model answered: finish reason and token usage. */
export function modelResponseAttributes(turn: ModelTurn, attempts: number): Attributes {
  const { usage } = turn;
  return {
    "gen_ai.response.finish_reasons": [turn.finishReason],
    "gen_ai.usage.input_tokens": usage.inputTokens,
    "gen_ai.usage.output_tokens": usage.outputTokens,
    ...(usage.cacheReadTokens !== undefined ? { "gen_ai.usage.cache_read.input_tokens": usage.cacheReadTokens } : {}),
    ...(usage.cacheWriteTokens !== undefined ? { "gen_ai.usage.cache_creation.input_tokens": usage.cacheWriteTokens } : {}),
    ...(usage.reasoningTokens !== undefined ? { "gen_ai.usage.reasoning.output_tokens": usage.reasoningTokens } : {}),
    "phronomy.attempts": attempts,
  };
}

/** `execute_tool`: the tool and its call. */
export function toolAttributes(toolName: string, callId: string, description: string | undefined): Attributes {
  return {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": toolName,
    "gen_ai.tool.call.id": callId,
    "gen_ai.tool.type": "function",
    ...(description !== undefined ? { "gen_ai.tool.description": description } : {}),
  };
}
