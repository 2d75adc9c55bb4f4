// The reference model of the filer's side of the inbox, moved out of the
// host by docs/decisions/0110 (`filedDecisionVerdict`,
// `filedStartFollowVerdict`): each rule written the simple way (named
// facts, an ordered list of rules, the first that holds answers), as the
// oracle the compiled core must match on every fact (test/core) and on
// random arguments across the u32 range (test/fuzz/query-differential).

import { FiledDecisionFact as D, FiledFollowVerdict as V, FiledStartFollowFact as S } from "../../assembly/abi.js";

type Rules<T> = readonly { readonly when: (f: T) => boolean; readonly verdict: V }[];

/** A row's facts as read: its state only with a row, one state at most,
 * "later" only of a suspended row. */
interface RowRead {
  readonly row: boolean;
  readonly terminal: boolean;
  readonly suspended: boolean;
  readonly later: boolean;
}

const rowCannotHold = (f: RowRead): boolean => ((f.terminal || f.suspended) && !f.row) || (f.terminal && f.suspended) || (f.later && !f.suspended);

// -- a filed decision (0011, 0026, 0086) --------------------------------------------

interface DecisionRead extends RowRead {
  readonly kind: "approval" | "cancel" | "retry" | "both";
  readonly state: "filed" | "claimed" | "applied" | "refused" | "several";
}

const DECISION_RULES: Rules<DecisionRead> = [
  { when: (f) => f.kind === "both" || f.state === "several" || rowCannotHold(f), verdict: V.None },
  { when: (f) => f.state === "refused", verdict: V.SettleRefused },
  // Not applied and its execution ended: a cancel has nothing left to do,
  // an approval never claimed can no longer be applied (0086).
  { when: (f) => f.kind === "cancel" && f.state !== "applied" && f.terminal, verdict: V.SettleEnded },
  { when: (f) => f.kind === "approval" && f.state === "filed" && f.terminal, verdict: V.RefuseUnapplied },
  { when: (f) => f.state !== "applied", verdict: V.Follow },
  { when: (f) => !f.row || f.terminal, verdict: V.SettleEnded },
  { when: (f) => f.later, verdict: V.AnnounceSuspended },
  { when: () => true, verdict: V.Follow },
];

export function filedDecisionVerdictFor(facts: number): V {
  if (facts < 0 || facts >= D.End) return V.None;
  const has = (fact: D): boolean => (facts & fact) !== 0;
  const states = (["claimed", "applied", "refused"] as const).filter((_, index) => has([D.Claimed, D.Applied, D.Refused][index]!));
  const read: DecisionRead = {
    kind: has(D.Cancel) ? (has(D.Retry) ? "both" : "cancel") : has(D.Retry) ? "retry" : "approval",
    state: states.length > 1 ? "several" : (states[0] ?? "filed"),
    row: has(D.RowFound),
    terminal: has(D.RowTerminal),
    suspended: has(D.RowSuspended),
    later: has(D.SuspendedLater),
  };
  return DECISION_RULES.find((rule) => rule.when(read))!.verdict;
}

// -- a filed start followed (0031, 0047) ---------------------------------------------

interface StartRead extends RowRead {
  readonly observer: boolean;
  readonly filed: boolean;
  readonly refused: boolean;
  readonly queued: boolean;
}

const START_RULES: Rules<StartRead> = [
  { when: (f) => rowCannotHold(f) || (f.refused && !f.filed), verdict: V.None },
  { when: (f) => f.row && f.observer && (f.terminal || f.suspended), verdict: V.SettleFromRow },
  { when: (f) => f.terminal, verdict: V.SettleEnded },
  { when: (f) => f.later, verdict: V.AnnounceSuspended },
  { when: (f) => f.row, verdict: V.Follow },
  { when: (f) => f.refused, verdict: V.SettleRefused },
  { when: (f) => !f.filed && !f.queued && f.observer, verdict: V.SettleFromRow },
  { when: (f) => !f.filed && !f.queued, verdict: V.RefuseGone },
  { when: () => true, verdict: V.FollowFiled },
];

export function filedStartFollowVerdictFor(facts: number): V {
  if (facts < 0 || facts >= S.End) return V.None;
  const has = (fact: S): boolean => (facts & fact) !== 0;
  const read: StartRead = {
    observer: has(S.Observer),
    row: has(S.RowFound),
    terminal: has(S.RowTerminal),
    suspended: has(S.RowSuspended),
    later: has(S.SuspendedLater),
    filed: has(S.Filed),
    refused: has(S.Refused),
    queued: has(S.Queued),
  };
  return START_RULES.find((rule) => rule.when(read))!.verdict;
}
