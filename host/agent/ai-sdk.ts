// The AI SDK (`ai`), loaded on first use. Model calls go through its own
// `generateText`/`streamText` (docs/decisions/0033): it turns messages into
// the provider prompt, downloads URLs a provider cannot fetch, resolves
// string model ids through the global provider or the gateway, and
// parses structured output. It is an optional peer dependency: every
// AI SDK user already has it, and a program that never calls a model (a
// visitor, the CLI's store commands) never loads it.

import { PhronomyError } from "../errors.js";

export type AiSdk = typeof import("ai");

let loading: Promise<AiSdk> | undefined;

/** The `ai` module, or a clear typed error naming the package to install. */
export function loadAiSdk(): Promise<AiSdk> {
  loading ??= import("ai").catch((error: unknown) => {
    loading = undefined;
    const message = error instanceof Error ? error.message : String(error);
    const missing = (error as { code?: unknown } | null)?.code === "ERR_MODULE_NOT_FOUND" || /cannot find (package|module)|not a dependency/i.test(message);
    throw new PhronomyError(
      "INVALID_INPUT",
      missing
        ? `Phronomy calls models through the AI SDK, whose package "ai" is not installed: npm install ai (version 7) (${message})`
        : `Phronomy calls models through the AI SDK, whose package "ai" could not be loaded: ${message}`,
      { cause: error, details: { package: "ai" } },
    );
  });
  return loading;
}

/** Starts loading `ai` without waiting (an agent was just defined: its
 * first model call will need it); a failure is reported by that call. */
export function preloadAiSdk(): void {
  loadAiSdk().catch(() => undefined);
  void loadAiSdkInternals();
}

/** The AI SDK's own building blocks (`ai/internal`), which a direct model
 * call uses instead of `generateText`'s pipeline (direct-call.ts). */
export type AiSdkInternals = typeof import("ai/internal");

let loadingInternals: Promise<AiSdkInternals | undefined> | undefined;

/** `ai/internal`, or `undefined` when the installed `ai` has none: its
 * model calls then all go through `generateText`. */
export function loadAiSdkInternals(): Promise<AiSdkInternals | undefined> {
  loadingInternals ??= import("ai/internal").then(
    (internals) => internals,
    () => undefined,
  );
  return loadingInternals;
}
