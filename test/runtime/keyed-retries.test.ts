// The retry of a store write whose decision is made (the cancel of an
// aborted queued message, host/runtime/keyed-retries.ts) waits by the
// core's one backoff: the same series `RetryAfter` and `RetryHeadAfter`
// carry (250 ms doubling to 5 s), not numbers of its own.

import { afterEach, describe, expect, it, vi } from "vitest";
import { Limit } from "../../assembly/abi.js";
import { KeyedRetries } from "../../host/runtime/keyed-retries.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("KeyedRetries", () => {
  it("waits the core's backoff: 250 ms doubling to 5 s, until an attempt is done", async () => {
    vi.useFakeTimers();
    const retries = new KeyedRetries();
    const attemptsAt: number[] = [];
    const start = Date.now();
    let failures = 7;
    retries.schedule("execution-1", () => {
      attemptsAt.push(Date.now() - start);
      failures -= 1;
      return Promise.resolve(failures < 0);
    });
    await vi.advanceTimersByTimeAsync(60_000);
    const waits = attemptsAt.map((at, index) => at - (attemptsAt[index - 1] ?? 0));
    expect(waits).toEqual([Limit.RetryMsFirst, 500, 1000, 2000, 4000, Limit.RetryMsMax, Limit.RetryMsMax, Limit.RetryMsMax]);
  });

  it("keeps one attempt scheduled per key", async () => {
    vi.useFakeTimers();
    const retries = new KeyedRetries();
    let attempts = 0;
    const attempt = (): Promise<boolean> => {
      attempts += 1;
      return Promise.resolve(true);
    };
    retries.schedule("execution-1", attempt);
    retries.schedule("execution-1", attempt);
    await vi.advanceTimersByTimeAsync(Limit.RetryMsFirst);
    expect(attempts).toBe(1);
  });
});
