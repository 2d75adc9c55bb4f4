// The store's answer to a queue head's preparation, as the fact the core
// is told (`storeAnswerOf`, host/runtime/queue-words.ts): a translation
// only, each class named by its code and reason. A preparation fenced at
// the epoch it was sent with (`lease_lost`) wrote nothing: still queued,
// not now (docs/decisions/0134, 0136).

import { expect, it } from "vitest";
import { HeadOutcome } from "../../assembly/abi.js";
import { storeAnswerOf } from "../../host/runtime/queue-words.js";
import { errorOf } from "../core/every-error-code.js";

it("a preparation fenced at a lapsed epoch is not now; the same code without that reason, or the reason under another code, is refused", () => {
  expect(storeAnswerOf(errorOf("EXECUTION_REHYDRATION_REQUIRED", "lease_lost"))).toBe(HeadOutcome.NotNow);
  expect(storeAnswerOf(errorOf("AGENT_BUSY", "lease_not_held"))).toBe(HeadOutcome.NotNow);
  expect(storeAnswerOf(errorOf("EXECUTION_REHYDRATION_REQUIRED", undefined))).toBe(HeadOutcome.Refused);
  expect(storeAnswerOf(errorOf("AGENT_BUSY", "lease_lost"))).toBe(HeadOutcome.Refused);
  expect(storeAnswerOf(errorOf("INVALID_INPUT", "lease_lost"))).toBe(HeadOutcome.Refused);
});

it("a store fault is failed, an id already there exists, any other refusal is refused", () => {
  expect(storeAnswerOf(errorOf("STORE", undefined))).toBe(HeadOutcome.StoreFailed);
  expect(storeAnswerOf(errorOf("INVALID_INPUT", "execution_exists"))).toBe(HeadOutcome.ExecutionExists);
  expect(storeAnswerOf(errorOf("AGENT_BUSY", undefined))).toBe(HeadOutcome.Refused);
  expect(storeAnswerOf(errorOf("INVALID_INPUT", undefined))).toBe(HeadOutcome.Refused);
});
