// The retry policy on its own: which errors are transient, Retry-After in
// its three forms, exponential backoff with jitter and its bounds, the
// attempts reported and listed, and an abort ending the wait at once
// (what comes of each failed attempt is the core's: test/core/failed-attempt).

import { APICallError } from "ai";
import { beforeAll, describe, expect, it } from "vitest";
import { FailedAttemptFact } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { ModelFailedError, ModelRetriesExhaustedError, InvalidInputError, type FailedAttempt } from "../../host/errors.js";
import { delayFor, isTransientModelError, modelRetriesExhausted, retryAfterMsOf, withRetries } from "../../host/agent/retries.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

function apiError(statusCode: number | undefined, headers: Record<string, string> = {}): APICallError {
  return new APICallError({
    message: `status ${statusCode}`,
    url: "http://127.0.0.1/v1/chat/completions",
    requestBodyValues: {},
    statusCode,
    responseHeaders: headers,
  });
}

function modelError(cause: unknown): ModelFailedError {
  return new ModelFailedError("model failed", { cause, details: { modelId: "m" } });
}

describe("transient model errors", () => {
  it("are 408, 409, 429, 5xx and network failures; 400, 401 and Phronomy's own errors are not", () => {
    for (const status of [408, 409, 429, 500, 502, 503]) expect(isTransientModelError(modelError(apiError(status)))).toBe(true);
    for (const status of [400, 401, 403, 404, 422]) expect(isTransientModelError(modelError(apiError(status)))).toBe(false);
    const network = Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNRESET" } });
    expect(isTransientModelError(modelError(network))).toBe(true);
    expect(isTransientModelError(modelError(new Error("schema mismatch")))).toBe(false);
    expect(isTransientModelError(new InvalidInputError("bad"))).toBe(false);
  });

  it("read Retry-After as milliseconds, seconds or an HTTP date", () => {
    expect(retryAfterMsOf(modelError(apiError(429, { "retry-after-ms": "250" })))).toBe(250);
    expect(retryAfterMsOf(modelError(apiError(429, { "Retry-After": "3" })))).toBe(3000);
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMsOf(modelError(apiError(503, { "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" })), now)).toBe(5000);
    expect(retryAfterMsOf(modelError(apiError(503)))).toBeUndefined();
  });
});

describe("backoff", () => {
  it("doubles from the first delay, caps at the longest, takes up to half off as jitter, and honours a hint within bounds", () => {
    const none = () => 0;
    const most = () => 0.999999;
    expect([1, 2, 3, 4].map((n) => delayFor({ initialDelayMs: 100, maxDelayMs: 500 }, n, undefined, none))).toEqual([100, 200, 400, 500]);
    expect(delayFor({ initialDelayMs: 100 }, 2, undefined, most)).toBe(100);
    expect(delayFor({}, 1, undefined, none)).toBe(2000);
    expect(delayFor({ maxDelayMs: 10_000 }, 1, 7000, none)).toBe(7000);
    // A Retry-After past the longest delay is not waited: backoff instead.
    expect(delayFor({ initialDelayMs: 100, maxDelayMs: 1000 }, 1, 120_000, none)).toBe(100);
  });

  it("reports each failed attempt, then lists them all in the exhausted error", async () => {
    const reported: FailedAttempt[] = [];
    let calls = 0;
    const failure = await withRetries(
      { maxRetries: 2, initialDelayMs: 1 },
      {
        signal: new AbortController().signal,
        core,
        factsOf: () => FailedAttemptFact.Transient,
        onRetry: (attempt) => reported.push(attempt),
        random: () => 0,
      },
      async () => {
        calls += 1;
        throw modelError(apiError(503));
      },
      modelRetriesExhausted,
    ).catch((error: unknown) => error);
    expect(calls).toBe(3);
    expect(reported).toEqual([
      { attempt: 1, message: "model failed", statusCode: 503, delayMs: 1 },
      { attempt: 2, message: "model failed", statusCode: 503, delayMs: 2 },
    ]);
    expect(failure).toBeInstanceOf(ModelRetriesExhaustedError);
    expect((failure as ModelRetriesExhaustedError).attempts).toEqual([...reported, { attempt: 3, message: "model failed", statusCode: 503 }]);
    expect((failure as ModelRetriesExhaustedError).message).toMatch(/after 3 attempts: 503, 503, 503/);
  });

  it("stops waiting the moment the signal fires, with its reason", async () => {
    const controller = new AbortController();
    const reason = new Error("cancelled");
    const pending = withRetries(
      { maxRetries: 5, initialDelayMs: 60_000 },
      {
        signal: controller.signal,
        core,
        factsOf: () => FailedAttemptFact.Transient,
        onRetry: () => controller.abort(reason),
        random: () => 0,
      },
      async () => {
        throw modelError(apiError(429));
      },
      modelRetriesExhausted,
    );
    await expect(pending).rejects.toBe(reason);
  });
});
