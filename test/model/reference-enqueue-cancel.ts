// The reference model of two verdicts moved out of the host by
// docs/decisions/0110 — a refused enqueue (`enqueueRefusalVerdict`) and a
// cancel by id's rounds (`cancelRoundVerdict`) — each rule written the
// simple way (named facts, an ordered list of rules, the first that holds
// answers), as the oracle the compiled core must match on every fact
// (test/core) and on random arguments across the u32 range
// (test/fuzz/query-differential).

import {
  CancelAnswer,
  CancelRoundFact,
  CancelRoundVerdict,
  EnqueueRefusalFact,
  EnqueueRefusalVerdict,
  Limit,
  StartAnswer as Answer,
} from "../../assembly/abi.js";

// -- a refused enqueue (0063, 0110) ------------------------------------------------

/** What the host knows of a message whose enqueue was refused. */
interface EnqueueRead {
  readonly answer: Answer;
  readonly cancelling: boolean;
  readonly observed: boolean;
}

const exists = (f: EnqueueRead): boolean => f.answer === Answer.ExecutionExists;

const ENQUEUE_RULES: readonly { readonly when: (f: EnqueueRead) => boolean; readonly verdict: EnqueueRefusalVerdict }[] = [
  { when: (f) => f.answer === Answer.Started || f.answer === Answer.Queued, verdict: EnqueueRefusalVerdict.None },
  { when: (f) => f.cancelling && f.observed, verdict: EnqueueRefusalVerdict.None },
  { when: (f) => f.cancelling && exists(f), verdict: EnqueueRefusalVerdict.TellCancelQueued },
  { when: (f) => f.cancelling, verdict: EnqueueRefusalVerdict.TellCancelGone },
  { when: (f) => f.observed && exists(f), verdict: EnqueueRefusalVerdict.Follow },
  { when: (f) => f.observed, verdict: EnqueueRefusalVerdict.Reject },
  { when: (f) => exists(f), verdict: EnqueueRefusalVerdict.ForgetAndMerge },
  { when: () => true, verdict: EnqueueRefusalVerdict.Forget },
];

export function enqueueRefusalVerdictFor(answer: number, facts: number): EnqueueRefusalVerdict {
  if (answer <= Answer.None || answer >= Answer.End || facts < 0 || facts >= EnqueueRefusalFact.End) return EnqueueRefusalVerdict.None;
  const read: EnqueueRead = {
    answer: answer as Answer,
    cancelling: (facts & EnqueueRefusalFact.Cancelling) !== 0,
    observed: (facts & EnqueueRefusalFact.Observed) !== 0,
  };
  return ENQUEUE_RULES.find((rule) => rule.when(read))!.verdict;
}

// -- a cancel by id's rounds (0026, 0110) -------------------------------------------

/** What the host knows once a cancel by id's wait settled. */
interface CancelRead {
  readonly answer: CancelAnswer;
  readonly rowRead: boolean;
  readonly rowTerminal: boolean;
  readonly round: number;
}

const thrownUnread = (f: CancelRead): boolean => f.answer === CancelAnswer.Ended || f.answer === CancelAnswer.NotFound;
const suspendedFirst = (f: CancelRead): boolean => f.answer === CancelAnswer.ApprovalRequired || f.answer === CancelAnswer.Cancelled;

const CANCEL_RULES: readonly { readonly when: (f: CancelRead) => boolean; readonly verdict: CancelRoundVerdict }[] = [
  { when: (f) => f.rowTerminal && !f.rowRead, verdict: CancelRoundVerdict.None },
  { when: (f) => thrownUnread(f) && f.rowRead, verdict: CancelRoundVerdict.None },
  { when: (f) => thrownUnread(f), verdict: CancelRoundVerdict.Throw },
  { when: (f) => !f.rowRead, verdict: CancelRoundVerdict.ReadRow },
  { when: (f) => f.rowTerminal, verdict: CancelRoundVerdict.Answer },
  { when: (f) => suspendedFirst(f) && f.round < Limit.CancelRoundsMax - 1, verdict: CancelRoundVerdict.CancelAgain },
  { when: () => true, verdict: CancelRoundVerdict.Throw },
];

export function cancelRoundVerdictFor(answer: number, facts: number, round: number): CancelRoundVerdict {
  if (answer <= CancelAnswer.None || answer >= CancelAnswer.End || facts < 0 || facts >= CancelRoundFact.End) return CancelRoundVerdict.None;
  if (round < 0 || round >= Limit.CancelRoundsMax) return CancelRoundVerdict.None;
  const read: CancelRead = {
    answer: answer as CancelAnswer,
    rowRead: (facts & CancelRoundFact.RowRead) !== 0,
    rowTerminal: (facts & CancelRoundFact.RowTerminal) !== 0,
    round,
  };
  return CANCEL_RULES.find((rule) => rule.when(read))!.verdict;
}
