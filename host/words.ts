// The words every layer of the host shares: JSON values, an error as
// stored, token totals. They are plain data with no behaviour; they live
// below everything (test/architecture/import-graph.test.ts) so that the
// errors, the agent's messages and the store's records can all name them
// without importing each other. host/store/records.ts re-exports them with
// the records they appear in.

/** JSON-safe values: what the store persists in its JSON columns. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A typed error as stored: its stable code, message and optional details. */
export interface StoredError {
  /** The `PhronomyError` code (or the CLI's). */
  readonly code: string;
  /** What happened and what to do. */
  readonly message: string;
  /** The error's details, as JSON. */
  readonly details?: Json;
}

/** Tokens used, summed over model calls. */
export interface UsageTotals {
  /** Prompt tokens. */
  readonly inputTokens: number;
  /** Completion tokens. */
  readonly outputTokens: number;
  /** As the provider reports it (usually input + output). */
  readonly totalTokens: number;
  /** Input tokens read from the provider's prompt cache (part of
   * `inputTokens`); left out when the provider reported none. */
  readonly cacheReadTokens?: number;
  /** Input tokens written to the provider's prompt cache (part of
   * `inputTokens`); left out when none were reported. */
  readonly cacheWriteTokens?: number;
  /** Output tokens the model spent reasoning (part of `outputTokens`);
   * left out when none were reported. */
  readonly reasoningTokens?: number;
}

/** The detail counts of `UsageTotals`, which a provider may or may not report. */
export const usageDetailKeys = ["cacheReadTokens", "cacheWriteTokens", "reasoningTokens"] as const;

/** Two usages summed: totals always, each detail when either reported it. */
export function addUsage(a: UsageTotals, b: UsageTotals): UsageTotals {
  const sum: { -readonly [Key in keyof UsageTotals]: UsageTotals[Key] } = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
  for (const key of usageDetailKeys) {
    const total = (a[key] ?? 0) + (b[key] ?? 0);
    if (total > 0) sum[key] = total;
  }
  return sum;
}

/** `12 in · 30 out (8 reasoning) · 42 tokens · 10 cached`, as the CLI and
 * dashboard show a usage; `totalWord` names the last total. */
export function usageSummary(usage: UsageTotals, totalWord = "tokens"): string {
  const reasoning = usage.reasoningTokens ? ` (${usage.reasoningTokens} reasoning)` : "";
  const cached = [
    ...(usage.cacheReadTokens ? [`${usage.cacheReadTokens} cache read`] : []),
    ...(usage.cacheWriteTokens ? [`${usage.cacheWriteTokens} cache write`] : []),
  ];
  return [`${usage.inputTokens} in`, `${usage.outputTokens} out${reasoning}`, `${usage.totalTokens} ${totalWord}`, ...cached].join(" · ");
}
