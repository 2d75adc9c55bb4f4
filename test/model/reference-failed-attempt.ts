// The reference model of a failed attempt of a model call or a tool, moved
// out of the host by docs/decisions/0110 (`failedAttemptVerdict`): the
// rules written the simple way (named facts, an ordered list of rules, the
// first that holds answers), as the oracle the compiled core must match on
// every fact (test/core) and on random arguments across the u32 range
// (test/fuzz/query-differential).

import { FailedAttemptFact as F, FailedAttemptVerdict as V } from "../../assembly/abi.js";

interface AttemptRead {
  readonly aborted: boolean;
  readonly tool: boolean;
  readonly phronomy: boolean;
  readonly transient: boolean;
  readonly streamed: boolean;
  readonly number: number;
  readonly maxRetries: number;
}

const retryable = (f: AttemptRead): boolean => (f.tool ? !f.phronomy : f.transient && !f.streamed);

const RULES: readonly { readonly when: (f: AttemptRead) => boolean; readonly verdict: V }[] = [
  { when: (f) => f.number === 0 || f.number > f.maxRetries + 1, verdict: V.None },
  { when: (f) => f.tool && (f.transient || f.streamed), verdict: V.None },
  { when: (f) => !f.tool && f.phronomy, verdict: V.None },
  { when: (f) => f.aborted || !retryable(f), verdict: V.Throw },
  { when: (f) => f.number <= f.maxRetries, verdict: V.Retry },
  { when: (f) => f.maxRetries === 0, verdict: V.Throw },
  { when: () => true, verdict: V.ThrowExhausted },
];

export function failedAttemptVerdictFor(facts: number, number: number, maxRetries: number): V {
  if (facts < 0 || facts >= F.End) return V.None;
  const read: AttemptRead = {
    aborted: (facts & F.Aborted) !== 0,
    tool: (facts & F.Tool) !== 0,
    phronomy: (facts & F.PhronomyError) !== 0,
    transient: (facts & F.Transient) !== 0,
    streamed: (facts & F.Streamed) !== 0,
    number,
    maxRetries,
  };
  return RULES.find((rule) => rule.when(read))!.verdict;
}
