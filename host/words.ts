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

/** What a suspended execution waits for (decisions 0075–0079): a person's
 * approval, a typed value (`humanInput()`), a keyed event, a child
 * execution, or a timer. */
export type WaitKind = "approval" | "input" | "event" | "child" | "timer";

const waitKinds: readonly WaitKind[] = ["approval", "input", "event", "child", "timer"];

const waitingWordsByKind: Readonly<Record<WaitKind, string>> = {
  approval: "waiting for approval",
  input: "waiting for input",
  event: "waiting for an event",
  child: "waiting for a child",
  timer: "waiting for a timer",
};

/** The kind of a pending wait request (`ExecutionRow.approvalRequest`);
 * a request without a kind is an approval, as before kinds were recorded. */
export function waitKindOf(request: unknown): WaitKind {
  const kind = typeof request === "object" && request !== null ? (request as { kind?: unknown }).kind : undefined;
  return waitKinds.find((known) => known === kind) ?? "approval";
}

/** `waiting for approval`, `waiting for an event`, …: a suspended
 * execution's state as the CLI and the dashboard say it. */
export function waitingWords(kind: WaitKind): string {
  return waitingWordsByKind[kind];
}

/** The promise's value if it settles within `ms`, undefined otherwise; a
 * rejection within `ms` is thrown. The dashboard's actions and the bulk
 * actions of `env.admin` wait so for what they can know quickly. */
export async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
