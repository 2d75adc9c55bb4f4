// The AI SDK call settings a definition may set, passed to the provider
// unchanged: read by the definition's checks (model-settings.ts), by the
// options it is built from, and by the direct model call (direct-call.ts),
// which carries out exactly these as `generateText` does.

export const MODEL_CALL_SETTING_KEYS = [
  "maxOutputTokens",
  "temperature",
  "topP",
  "topK",
  "presencePenalty",
  "frequencyPenalty",
  "seed",
  "stopSequences",
  "headers",
  "providerOptions",
] as const;
