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
}
