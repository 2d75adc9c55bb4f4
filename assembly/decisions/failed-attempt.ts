// A failed attempt of a model call or a tool (bounded retries with
// backoff, host/agent/retries.ts; moved here by 0110): thrown, or tried
// again after the backoff's delay. A pure function of facts the host read;
// the delay itself (the provider's hint, the jitter) stays the host's.
// Exported so the table test walks every fact.
//
// Rules kept here:
// * The execution's signal fired: thrown as it is.
// * A tool's throw is retried unless it is a PhronomyError (a refusal of
//   the runtime's, or one the tool chose).
// * A model call's error is retried when the provider's answer reads as
//   transient, unless its stream showed text already.
// * Not retryable: thrown as it is. Retryable with retries used up
//   (`number > maxRetries`): thrown as it is when none were allowed, else
//   as the exhausted error naming every attempt.

import { FailedAttemptFact, FailedAttemptVerdict } from "../abi";

/** What comes of attempt `number` (from 1) failing, given `facts`
 * (`FailedAttemptFact` bits) and `maxRetries` (attempts after the first).
 * `None` for facts out of range, `PhronomyError` without `Tool`,
 * `Transient` or `Streamed` with it, attempt 0, or an attempt past the
 * last one allowed. */
export function failedAttemptVerdictOf(facts: u32, number: u32, maxRetries: u32): u32 {
  if (facts >= <u32>FailedAttemptFact.End || number == 0 || <u64>number > <u64>maxRetries + 1) return FailedAttemptVerdict.None;
  const tool = (facts & FailedAttemptFact.Tool) != 0;
  const phronomy = (facts & FailedAttemptFact.PhronomyError) != 0;
  const transient = (facts & FailedAttemptFact.Transient) != 0;
  const streamed = (facts & FailedAttemptFact.Streamed) != 0;
  if (tool ? transient || streamed : phronomy) return FailedAttemptVerdict.None;
  if ((facts & FailedAttemptFact.Aborted) != 0) return FailedAttemptVerdict.Throw;
  const retryable = tool ? !phronomy : transient && !streamed;
  if (!retryable) return FailedAttemptVerdict.Throw;
  if (number <= maxRetries) return FailedAttemptVerdict.Retry;
  return maxRetries == 0 ? FailedAttemptVerdict.Throw : FailedAttemptVerdict.ThrowExhausted;
}
