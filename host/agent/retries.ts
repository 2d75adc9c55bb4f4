// Bounded retries with exponential backoff and jitter, for model calls (on
// transient provider errors) and for tools that opt in. Defaults are the
// AI SDK's own: 2 retries, 2 s first delay, doubling; a `Retry-After` (or
// `retry-after-ms`) header the provider sent wins when it is at most the
// longest delay. Every failed attempt is reported before the wait (the
// loop puts it on the timeline); the wait ends at once when the signal
// fires (a cancel or a timeout), rejecting with the signal's reason.

import { FailedAttemptFact, FailedAttemptVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { ModelFailedError, ModelRetriesExhaustedError, PhronomyError, type FailedAttempt } from "../errors.js";

export interface RetrySettings {
  /** Attempts after the first (default 2, as the AI SDK). */
  readonly maxRetries?: number;
  /** The first wait (default 2,000 ms); each next one doubles. */
  readonly initialDelayMs?: number;
  /** The longest wait, and the longest `Retry-After` honoured (default 60,000 ms). */
  readonly maxDelayMs?: number;
}

export const MODEL_RETRIES_DEFAULT = 2;
export const RETRY_INITIAL_DELAY_MS_DEFAULT = 2_000;
export const RETRY_MAX_DELAY_MS_DEFAULT = 60_000;
/** Retries a definition may ask for, at most. */
export const RETRIES_MAX = 10;

export interface RetryHooks {
  readonly signal: AbortSignal;
  /** The core, which decides what comes of a failed attempt
   * (`failedAttemptVerdict`, docs/decisions/0110). */
  readonly core: Pick<ControlCore, "failedAttemptVerdict">;
  /** What the failed attempt's error is, as `FailedAttemptFact` bits
   * (`Tool` and `PhronomyError` for a tool's; `Transient`, `Streamed` for
   * a model call's); `Aborted` is read from `signal`. */
  factsOf(error: unknown): number;
  /** A wait the error itself asks for (a `Retry-After`), in ms. */
  delayHint?(error: unknown): number | undefined;
  /** A failed attempt that will be retried after `delayMs`. */
  onRetry(failure: FailedAttempt, error: unknown): void;
  /** Uniform in [0, 1); `Math.random` unless a test fixes it. */
  random?(): number;
}

/** Runs `attempt` until it succeeds, fails with an error that is not
 * retryable (rethrown as it is), or fails retryably once more than
 * `maxRetries` allows: then `exhausted` says what to throw. Which of these
 * a failure is, the core decides (`failedAttemptVerdict`). */
export async function withRetries<T>(
  settings: RetrySettings,
  hooks: RetryHooks,
  attempt: (number: number) => Promise<T>,
  exhausted: (error: unknown, attempts: FailedAttempt[]) => unknown,
): Promise<T> {
  const maxRetries = settings.maxRetries ?? MODEL_RETRIES_DEFAULT;
  const failures: FailedAttempt[] = [];
  for (let number = 1; ; number += 1) {
    try {
      return await attempt(number);
    } catch (error) {
      const facts = hooks.factsOf(error) | (hooks.signal.aborted ? FailedAttemptFact.Aborted : 0);
      const verdict = hooks.core.failedAttemptVerdict(facts, number, maxRetries) as FailedAttemptVerdict;
      if (verdict === FailedAttemptVerdict.ThrowExhausted) {
        failures.push(failureOf(number, error, undefined));
        throw exhausted(error, failures);
      }
      // `Throw`; `None` cannot come of these facts and attempts: thrown as it is.
      if (verdict !== FailedAttemptVerdict.Retry) throw error;
      const delayMs = delayFor(settings, number, hooks.delayHint?.(error), hooks.random ?? Math.random);
      const failure = failureOf(number, error, delayMs);
      failures.push(failure);
      hooks.onRetry(failure, error);
      await sleep(delayMs, hooks.signal);
    }
  }
}

/** The wait after failed attempt `number` (1-based): the hint when the
 * provider gave one within bounds, else `initial · 2^(number-1)` capped at
 * the longest delay, with jitter taking up to half of it off. */
export function delayFor(settings: RetrySettings, number: number, hint: number | undefined, random: () => number): number {
  const maxDelayMs = settings.maxDelayMs ?? RETRY_MAX_DELAY_MS_DEFAULT;
  if (hint !== undefined && hint >= 0 && hint <= maxDelayMs) return Math.ceil(hint);
  const base = Math.min(maxDelayMs, (settings.initialDelayMs ?? RETRY_INITIAL_DELAY_MS_DEFAULT) * 2 ** (number - 1));
  return Math.round(base * (1 - random() / 2));
}

function failureOf(attempt: number, error: unknown, delayMs: number | undefined): FailedAttempt {
  const statusCode = statusCodeOf(error);
  return {
    attempt,
    message: error instanceof Error ? error.message : String(error),
    ...(statusCode !== undefined ? { statusCode } : {}),
    ...(delayMs !== undefined ? { delayMs } : {}),
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

// -- model errors ------------------------------------------------------------------

/** The provider's error behind a model failure. */
function providerErrorOf(error: unknown): Record<string, unknown> | undefined {
  const cause = error instanceof ModelFailedError ? error.cause : error;
  return typeof cause === "object" && cause !== null ? (cause as Record<string, unknown>) : undefined;
}

function statusCodeOf(error: unknown): number | undefined {
  const statusCode = providerErrorOf(error)?.statusCode;
  return typeof statusCode === "number" ? statusCode : undefined;
}

/** Transient: the AI SDK's `APICallError.isRetryable` (408, 409, 429, 5xx,
 * and a request that never reached the server), or such a status, or a
 * network error code. A Phronomy error of any other kind never is. */
export function isTransientModelError(error: unknown): boolean {
  if (error instanceof PhronomyError && !(error instanceof ModelFailedError)) return false;
  const cause = providerErrorOf(error);
  if (cause === undefined) return false;
  if (cause.isRetryable === true) return true;
  const status = cause.statusCode;
  if (typeof status === "number") return status === 408 || status === 409 || status === 429 || status >= 500;
  const code = (cause.cause as { code?: unknown } | undefined)?.code ?? cause.code;
  return typeof code === "string" && ["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "UND_ERR_SOCKET"].includes(code);
}

/** `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. */
export function retryAfterMsOf(error: unknown, now: number = Date.now()): number | undefined {
  const headers = providerErrorOf(error)?.responseHeaders as Record<string, string> | undefined;
  if (headers === undefined || headers === null) return undefined;
  const header = (name: string): string | undefined => Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  const milliseconds = Number.parseFloat(header("retry-after-ms") ?? "");
  if (Number.isFinite(milliseconds)) return milliseconds;
  const value = header("retry-after");
  if (value === undefined) return undefined;
  const seconds = Number.parseFloat(value);
  if (Number.isFinite(seconds)) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/** The error a model call throws when every attempt failed transiently. */
export function modelRetriesExhausted(error: unknown, attempts: FailedAttempt[]): ModelRetriesExhaustedError {
  const last = error instanceof PhronomyError ? error : undefined;
  const message =
    `${last?.message ?? String(error)} (after ${attempts.length} attempts: ` + `${attempts.map((attempt) => attempt.statusCode ?? "network").join(", ")})`;
  return new ModelRetriesExhaustedError(message, attempts, {
    agentId: last?.agentId,
    executionId: last?.executionId,
    cause: last?.cause ?? error,
    details: last?.details,
  });
}
