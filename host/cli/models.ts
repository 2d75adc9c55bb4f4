// Real models for the CLI: `--model openai-compatible:<model> --base-url
// <url>` (or PHRONOMY_MODEL, PHRONOMY_BASE_URL and PHRONOMY_API_KEY) make
// the agent call an OpenAI-compatible chat-completions endpoint — OpenAI,
// Ollama, vLLM, llama.cpp's server — through the AI SDK's
// `@ai-sdk/openai-compatible` provider. The key is read from the
// environment only, never from an argument (arguments show up in `ps`).
//
// The provider package is the 2.x line: it implements language model v3,
// which the runtime accepts, and runs on Node 20 (the 3.x line needs 22).

import type { LanguageModel } from "../index.js";
import { CliError } from "./errors.js";

export const MODEL_VARIABLE = "PHRONOMY_MODEL";
export const BASE_URL_VARIABLE = "PHRONOMY_BASE_URL";
export const API_KEY_VARIABLE = "PHRONOMY_API_KEY";

/** The providers `--model` knows, as `<provider>:<model id>`. */
export const MODEL_PROVIDERS = ["openai-compatible"] as const;

export interface ModelSettings {
  /** `openai-compatible:<model>`, from `--model` or PHRONOMY_MODEL. */
  readonly model: string | undefined;
  readonly baseUrl: string | undefined;
  readonly apiKey: string | undefined;
}

/** Flags win over environment variables; empty values count as unset. */
export function modelSettingsOf(flags: { readonly model?: string; readonly baseUrl?: string }, environment: NodeJS.ProcessEnv = process.env): ModelSettings {
  return {
    model: nonEmpty(flags.model) ?? nonEmpty(environment[MODEL_VARIABLE]),
    baseUrl: nonEmpty(flags.baseUrl) ?? nonEmpty(environment[BASE_URL_VARIABLE]),
    apiKey: nonEmpty(environment[API_KEY_VARIABLE]),
  };
}

/** The language model the settings name, or undefined when none is named.
 * A `--base-url` without a model is a mistake worth reporting. */
export async function createModel(settings: ModelSettings): Promise<LanguageModel | undefined> {
  if (settings.model === undefined) {
    if (settings.baseUrl !== undefined) {
      throw new CliError(
        "MODEL_NOT_CONFIGURED",
        `a base URL was given (${settings.baseUrl}) but no model: add --model openai-compatible:<model> (or set ${MODEL_VARIABLE})`,
      );
    }
    return undefined;
  }
  const separator = settings.model.indexOf(":");
  const provider = separator < 0 ? settings.model : settings.model.slice(0, separator);
  const modelId = separator < 0 ? "" : settings.model.slice(separator + 1);
  if (!(MODEL_PROVIDERS as readonly string[]).includes(provider) || modelId.length === 0) {
    throw new CliError(
      "USAGE",
      `--model ${settings.model}: expected <provider>:<model>, with provider ${MODEL_PROVIDERS.join(" or ")} (e.g. openai-compatible:gpt-4o-mini, openai-compatible:llama3.2)`,
    );
  }
  return openAiCompatibleModel(modelId, settings);
}

async function openAiCompatibleModel(modelId: string, settings: ModelSettings): Promise<LanguageModel> {
  if (settings.baseUrl === undefined) {
    throw new CliError(
      "MODEL_NOT_CONFIGURED",
      `--model ${settings.model} needs the endpoint: pass --base-url <url> or set ${BASE_URL_VARIABLE} (e.g. https://api.openai.com/v1, or http://localhost:11434/v1 for Ollama)`,
    );
  }
  let url: URL;
  try {
    url = new URL(settings.baseUrl);
  } catch {
    throw new CliError("USAGE", `--base-url ${settings.baseUrl} is not a URL; give e.g. http://localhost:11434/v1`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CliError("USAGE", `--base-url ${settings.baseUrl}: only http and https endpoints are supported`);
  }
  // Imported only when a real model is asked for: most commands need none.
  // An optional peer dependency of the package (issue 17).
  const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible").catch((error: unknown) => {
    throw new CliError(
      "MODEL_NOT_CONFIGURED",
      `--model ${settings.model} needs the AI SDK provider @ai-sdk/openai-compatible, which is not installed: npm install @ai-sdk/openai-compatible (${error instanceof Error ? error.message : String(error)})`,
    );
  });
  const provider = createOpenAICompatible({
    name: "openai-compatible",
    baseURL: settings.baseUrl.replace(/\/+$/, ""),
    // Local servers (Ollama, llama.cpp) need no key; then no header is sent.
    ...(settings.apiKey !== undefined ? { apiKey: settings.apiKey } : {}),
    // Token usage in streamed answers too (`stream_options.include_usage`).
    includeUsage: true,
  });
  return provider.chatModel(modelId);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim().length === 0 ? undefined : value.trim();
}
