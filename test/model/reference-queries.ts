// The reference model of the core's pure queries moved out of the host by
// docs/decisions/0087: each rule written the simple way (named facts, an
// ordered list of rules, the first that holds answers), as the oracle the
// compiled core must match on every fact (test/core) and on random
// arguments across the whole u32 range (test/fuzz/query-differential).

import {
  ChildFact,
  ChildStartVerdict,
  ClaimAnswer,
  ClaimFact,
  ClaimVerdict,
  DueFireFact,
  DueFireVerdict,
  FiledStartFact,
  FiledStartVerdict,
  KeyedStartFact,
  KeyedStartVerdict,
  Limit,
  ReplaceFact,
  ReplaceVerdict,
  ScheduleClaimVerdict as Claim,
  ScheduleFact,
  ScheduleFiringFact,
  ScheduleFiringVerdict as Firing,
  StartAnswer as Answer,
  StoredSignalFact,
  StoredSignalVerdict,
  ToolCallCount,
  TurnCallFact,
  TurnCallVerdict,
} from "../../assembly/abi.js";

// -- schedules (0078's rules) ------------------------------------------------------

/** A schedule row's state, as the host reads it. */
export interface ScheduleRowFacts {
  readonly pending: boolean;
  readonly recurring: boolean;
  readonly due: boolean;
  readonly runNow: boolean;
  readonly ownerGone: boolean;
  /** Its last slot is not before now (0098). */
  readonly firedThisInstant: boolean;
}

const CLAIM_RULES: readonly { readonly when: (f: ScheduleRowFacts) => boolean; readonly verdict: Claim }[] = [
  { when: (f) => f.runNow && f.ownerGone, verdict: Claim.None },
  { when: (f) => f.runNow && f.pending, verdict: Claim.RefusePending },
  // A run now never claims its last slot again, nor fires at now past a due slot (0098).
  { when: (f) => f.runNow && f.firedThisInstant, verdict: Claim.RefuseFiredThisInstant },
  { when: (f) => f.runNow && f.due && f.recurring, verdict: Claim.FireDueThenAfterNow },
  { when: (f) => f.runNow && f.due, verdict: Claim.FireDueOnce },
  { when: (f) => f.runNow && f.recurring, verdict: Claim.FireNowKeepNext },
  { when: (f) => f.runNow, verdict: Claim.FireNowOnce },
  { when: (f) => f.pending && (f.due || f.ownerGone), verdict: Claim.ClaimAgain },
  { when: (f) => f.pending, verdict: Claim.Skip },
  { when: (f) => !f.due, verdict: Claim.Skip },
  { when: (f) => f.recurring, verdict: Claim.FireDueThenAfterNow },
  { when: () => true, verdict: Claim.FireDueOnce },
];

export function scheduleClaimVerdictFor(facts: number): Claim {
  if (!Number.isInteger(facts) || facts < 0 || facts >= ScheduleFact.End) return Claim.None;
  const row: ScheduleRowFacts = {
    pending: (facts & ScheduleFact.FiringPending) !== 0,
    recurring: (facts & ScheduleFact.Recurring) !== 0,
    due: (facts & ScheduleFact.Due) !== 0,
    runNow: (facts & ScheduleFact.RunNow) !== 0,
    ownerGone: (facts & ScheduleFact.OwnerGone) !== 0,
    firedThisInstant: (facts & ScheduleFact.FiredThisInstant) !== 0,
  };
  return CLAIM_RULES.find((rule) => rule.when(row))!.verdict;
}

/** Refusals a later claim of the same firing may not meet: the process
 * closing, the store failing, a bound full, the outcome not known, a
 * conversation's lease in flux (held elsewhere, or held for recovery). */
const PASSING_ANSWERS: readonly Answer[] = [
  Answer.Stopping,
  Answer.StoreFailed,
  Answer.Full,
  Answer.CoreFailed,
  Answer.Internal,
  Answer.LeaseNotHeld,
  Answer.BusyHeld,
];

export function scheduleFiringVerdictFor(facts: number, answer: number): Firing {
  if (facts < 0 || facts >= ScheduleFiringFact.End || answer < 0 || answer >= Answer.End) return Firing.None;
  const claimed = (facts & ScheduleFiringFact.Claimed) !== 0;
  const here = (facts & ScheduleFiringFact.DefinedHere) !== 0;
  const keyedFound = (facts & ScheduleFiringFact.KeyedExecutionFound) !== 0;
  const keyedQueued = (facts & ScheduleFiringFact.KeyedExecutionQueued) !== 0;
  const refused = answer !== Answer.None && answer !== Answer.Started && answer !== Answer.Queued;
  // The keyed execution is read only after a refusal, and is queued only if found.
  if ((keyedQueued && !keyedFound) || (keyedFound && !refused)) return Firing.None;
  if (answer !== Answer.None && !(claimed && here)) return Firing.None;
  if (!claimed) return Firing.Skip;
  if (!here) return Firing.LeavePending;
  if (answer === Answer.None) return Firing.Start;
  // A refusal naming the firing's keyed execution, which the store has: an earlier claimer started it (0097).
  if (keyedFound) return keyedQueued ? Firing.SettleQueued : Firing.SettleStarted;
  if (answer === Answer.Started) return Firing.SettleStarted;
  if (answer === Answer.Queued) return Firing.SettleQueued;
  return PASSING_ANSWERS.includes(answer) ? Firing.LeavePending : Firing.SettleRefused;
}

// -- a parent's child start (0079, 0086, 0096) --------------------------------------

/** Refusals that say nothing of whether the child starts: made again
 * later (a conversation held for recovery: decision 0099). */
const CHILD_RETRIED: readonly Answer[] = [Answer.StoreFailed, Answer.LeaseNotHeld, Answer.BusyHeld];

/** What the host read of the child's row. */
interface ChildRead {
  readonly read: boolean;
  readonly found: boolean;
  readonly ended: boolean;
  readonly failed: boolean;
}

/** Rules for a start with an execution id (`followed`) or refused, after a read. */
const CHILD_READ_RULES: readonly { readonly when: (f: ChildRead, followed: boolean) => boolean; readonly verdict: ChildStartVerdict }[] = [
  { when: (f) => !f.read, verdict: ChildStartVerdict.None },
  { when: (f) => f.ended && !f.found, verdict: ChildStartVerdict.None },
  { when: (f, followed) => f.failed && followed, verdict: ChildStartVerdict.Leave },
  { when: (f) => f.failed, verdict: ChildStartVerdict.StartAgainLater },
  { when: (f) => f.ended, verdict: ChildStartVerdict.TellOutcome },
  { when: (f) => f.found, verdict: ChildStartVerdict.Leave },
  { when: (_, followed) => followed, verdict: ChildStartVerdict.Leave },
  { when: () => true, verdict: ChildStartVerdict.TellRefusal },
];

/** What the host read of the parent's row when a start made again later
 * came due (decision 0099). */
interface ParentRead {
  readonly failed: boolean;
  readonly suspended: boolean;
  readonly onWait: boolean;
}

/** Rules for a start made again later coming due: made now only while the
 * parent is suspended on that very wait. */
const CHILD_DUE_AGAIN_RULES: readonly { readonly when: (f: ParentRead) => boolean; readonly verdict: ChildStartVerdict }[] = [
  { when: (f) => f.failed && (f.suspended || f.onWait), verdict: ChildStartVerdict.None },
  { when: (f) => f.failed, verdict: ChildStartVerdict.StartAgainLater },
  { when: (f) => f.suspended && f.onWait, verdict: ChildStartVerdict.StartAgain },
  { when: () => true, verdict: ChildStartVerdict.Drop },
];

export function childStartVerdictFor(answer: number, facts: number): ChildStartVerdict {
  if (answer <= Answer.None || answer >= Answer.End || facts < 0 || facts >= ChildFact.End) return ChildStartVerdict.None;
  const start = answer as Answer;
  if (facts === 0) {
    if (start === Answer.Stopping) return ChildStartVerdict.Drop;
    return CHILD_RETRIED.includes(start) ? ChildStartVerdict.StartAgainLater : ChildStartVerdict.ReadChild;
  }
  const parentFacts = ChildFact.ParentSuspended | ChildFact.ParentOnWait;
  const childFacts = ChildFact.Read | ChildFact.Found | ChildFact.Ended;
  if ((facts & ChildFact.ParentRead) !== 0) {
    // Only a refused start is made again, and it asks nothing of the child's row.
    if (start === Answer.Stopping || start === Answer.Started || start === Answer.Queued || (facts & childFacts) !== 0) return ChildStartVerdict.None;
    const parent: ParentRead = {
      failed: (facts & ChildFact.Failed) !== 0,
      suspended: (facts & ChildFact.ParentSuspended) !== 0,
      onWait: (facts & ChildFact.ParentOnWait) !== 0,
    };
    return CHILD_DUE_AGAIN_RULES.find((rule) => rule.when(parent))!.verdict;
  }
  if ((facts & parentFacts) !== 0) return ChildStartVerdict.None;
  // Nothing is read after Drop or StartAgainLater.
  if (start === Answer.Stopping || CHILD_RETRIED.includes(start)) return ChildStartVerdict.None;
  const read: ChildRead = {
    read: (facts & ChildFact.Read) !== 0,
    found: (facts & ChildFact.Found) !== 0,
    ended: (facts & ChildFact.Ended) !== 0,
    failed: (facts & ChildFact.Failed) !== 0,
  };
  const followed = start === Answer.Started || start === Answer.Queued;
  return CHILD_READ_RULES.find((rule) => rule.when(read, followed))!.verdict;
}

// -- a start filed for this process (0031, 0057, 0062, 0096) ----------------------

/** What the host knows of a filed start whose Run answered. */
interface FiledRead {
  readonly answer: Answer;
  readonly leftFiled: boolean;
  readonly admittedRead: boolean;
  readonly admittedHere: boolean;
}

const busy = (f: FiledRead): boolean => f.answer === Answer.BusyByPolicy || f.answer === Answer.BusyHeld;

const FILED_RULES: readonly { readonly when: (f: FiledRead) => boolean; readonly verdict: FiledStartVerdict }[] = [
  { when: (f) => f.admittedHere && !f.admittedRead, verdict: FiledStartVerdict.None },
  { when: (f) => f.admittedRead && !busy(f), verdict: FiledStartVerdict.None },
  { when: (f) => [Answer.Started, Answer.Queued, Answer.ExecutionExists].includes(f.answer), verdict: FiledStartVerdict.Ran },
  { when: (f) => f.admittedRead && f.leftFiled, verdict: FiledStartVerdict.None },
  { when: (f) => f.answer === Answer.Stopping || f.answer === Answer.CoreFailed || f.leftFiled, verdict: FiledStartVerdict.Left },
  { when: (f) => f.answer === Answer.StoreFailed || f.answer === Answer.LeaseNotHeld, verdict: FiledStartVerdict.WriteFailed },
  { when: (f) => busy(f) && !f.admittedRead, verdict: FiledStartVerdict.AskAdmitted },
  { when: (f) => busy(f) && f.admittedHere, verdict: FiledStartVerdict.Ran },
  { when: () => true, verdict: FiledStartVerdict.Refused },
];

export function filedStartVerdictFor(answer: number, facts: number): FiledStartVerdict {
  if (answer <= Answer.None || answer >= Answer.End || facts < 0 || facts >= FiledStartFact.End) return FiledStartVerdict.None;
  const read: FiledRead = {
    answer: answer as Answer,
    leftFiled: (facts & FiledStartFact.LeftFiled) !== 0,
    admittedRead: (facts & FiledStartFact.AdmittedRead) !== 0,
    admittedHere: (facts & FiledStartFact.AdmittedHere) !== 0,
  };
  return FILED_RULES.find((rule) => rule.when(read))!.verdict;
}

// -- a keyed start's refusal (0031, 0057, 0102) ----------------------------------

/** What the host knows of a keyed start whose inner Run was refused. */
interface KeyedRead {
  readonly answer: Answer;
  readonly admittedRead: boolean;
  readonly admittedHere: boolean;
}

/** `AGENT_BUSY`, whatever its reason. */
const keyedBusy = (f: KeyedRead): boolean => [Answer.BusyByPolicy, Answer.LeaseNotHeld, Answer.BusyHeld].includes(f.answer);

const KEYED_RULES: readonly { readonly when: (f: KeyedRead) => boolean; readonly verdict: KeyedStartVerdict }[] = [
  { when: (f) => f.answer === Answer.Started || f.answer === Answer.Queued, verdict: KeyedStartVerdict.None },
  { when: (f) => f.admittedHere && !f.admittedRead, verdict: KeyedStartVerdict.None },
  { when: (f) => f.admittedRead && !keyedBusy(f), verdict: KeyedStartVerdict.None },
  { when: (f) => f.answer === Answer.ExecutionExists, verdict: KeyedStartVerdict.Follow },
  { when: (f) => keyedBusy(f) && !f.admittedRead, verdict: KeyedStartVerdict.AskAdmitted },
  { when: (f) => keyedBusy(f) && f.admittedHere, verdict: KeyedStartVerdict.Follow },
  { when: () => true, verdict: KeyedStartVerdict.Fail },
];

export function keyedStartVerdictFor(answer: number, facts: number): KeyedStartVerdict {
  if (answer <= Answer.None || answer >= Answer.End || facts < 0 || facts >= KeyedStartFact.End) return KeyedStartVerdict.None;
  const read: KeyedRead = {
    answer: answer as Answer,
    admittedRead: (facts & KeyedStartFact.AdmittedRead) !== 0,
    admittedHere: (facts & KeyedStartFact.AdmittedHere) !== 0,
  };
  return KEYED_RULES.find((rule) => rule.when(read))!.verdict;
}

// -- the due sweep's fire (0076, 0102) --------------------------------------------

/** What the sweep knows of a due wait. */
interface DueRead {
  readonly closed: boolean;
  readonly definedHere: boolean;
  readonly refused: boolean;
  readonly storeFailed: boolean;
}

const DUE_RULES: readonly { readonly when: (f: DueRead) => boolean; readonly verdict: DueFireVerdict }[] = [
  { when: (f) => f.storeFailed && !f.refused, verdict: DueFireVerdict.None },
  { when: (f) => f.refused && !f.definedHere, verdict: DueFireVerdict.None },
  { when: (f) => !f.refused && (f.closed || !f.definedHere), verdict: DueFireVerdict.Skip },
  { when: (f) => !f.refused, verdict: DueFireVerdict.Fire },
  { when: (f) => f.storeFailed && !f.closed, verdict: DueFireVerdict.TryAgain },
  { when: () => true, verdict: DueFireVerdict.Drop },
];

export function dueFireVerdictFor(facts: number): DueFireVerdict {
  if (facts < 0 || facts >= DueFireFact.End) return DueFireVerdict.None;
  const read: DueRead = {
    closed: (facts & DueFireFact.Closed) !== 0,
    definedHere: (facts & DueFireFact.DefinedHere) !== 0,
    refused: (facts & DueFireFact.Refused) !== 0,
    storeFailed: (facts & DueFireFact.StoreFailed) !== 0,
  };
  return DUE_RULES.find((rule) => rule.when(read))!.verdict;
}

// -- a stored signal offered to its wait (0077, 0102) -------------------------------

/** What the host knows of a stored signal as it offers it. */
interface SignalRead {
  readonly definedHere: boolean;
  readonly answered: boolean;
  readonly refused: boolean;
  readonly payloadRefused: boolean;
}

const SIGNAL_RULES: readonly { readonly when: (f: SignalRead) => boolean; readonly verdict: StoredSignalVerdict }[] = [
  { when: (f) => f.refused && !f.answered, verdict: StoredSignalVerdict.None },
  { when: (f) => f.payloadRefused && !f.refused, verdict: StoredSignalVerdict.None },
  { when: (f) => f.answered && !f.definedHere, verdict: StoredSignalVerdict.None },
  { when: (f) => !f.answered && !f.definedHere, verdict: StoredSignalVerdict.Keep },
  { when: (f) => !f.answered, verdict: StoredSignalVerdict.Resume },
  { when: (f) => !f.refused, verdict: StoredSignalVerdict.Drop },
  { when: (f) => f.payloadRefused, verdict: StoredSignalVerdict.Drop },
  { when: () => true, verdict: StoredSignalVerdict.Keep },
];

export function storedSignalVerdictFor(facts: number): StoredSignalVerdict {
  if (facts < 0 || facts >= StoredSignalFact.End) return StoredSignalVerdict.None;
  const read: SignalRead = {
    definedHere: (facts & StoredSignalFact.DefinedHere) !== 0,
    answered: (facts & StoredSignalFact.Answered) !== 0,
    refused: (facts & StoredSignalFact.Refused) !== 0,
    payloadRefused: (facts & StoredSignalFact.PayloadRefused) !== 0,
  };
  return SIGNAL_RULES.find((rule) => rule.when(read))!.verdict;
}

// -- a claim in the approval inbox (0011, 0031, 0086, 0102) -------------------------

/** What the host knows of a claim. */
interface ClaimRead {
  readonly approval: boolean;
  readonly claimedAgain: boolean;
  readonly decidedRead: boolean;
  readonly decidedThis: boolean;
  readonly closed: boolean;
  readonly held: boolean;
}

function claimReadOf(facts: number): ClaimRead {
  return {
    approval: (facts & ClaimFact.Approval) !== 0,
    claimedAgain: (facts & ClaimFact.ClaimedAgain) !== 0,
    decidedRead: (facts & ClaimFact.DecidedRead) !== 0,
    decidedThis: (facts & ClaimFact.DecidedThis) !== 0,
    closed: (facts & ClaimFact.Closed) !== 0,
    held: (facts & ClaimFact.Held) !== 0,
  };
}

/** An approval claimed again is looked up in its timeline first. */
const looksUp = (f: ClaimRead): boolean => f.approval && f.claimedAgain;

const DECISION_RULES: readonly { readonly when: (f: ClaimRead, answer: ClaimAnswer) => boolean; readonly verdict: ClaimVerdict }[] = [
  { when: (f) => f.decidedThis && !f.decidedRead, verdict: ClaimVerdict.None },
  { when: (f) => f.decidedRead && !looksUp(f), verdict: ClaimVerdict.None },
  { when: (f, a) => a === ClaimAnswer.None && looksUp(f) && !f.decidedRead, verdict: ClaimVerdict.AskDecided },
  { when: (f, a) => a === ClaimAnswer.None && f.decidedThis, verdict: ClaimVerdict.SettleApplied },
  { when: (f, a) => a === ClaimAnswer.None && f.closed, verdict: ClaimVerdict.Leave },
  { when: (_, a) => a === ClaimAnswer.None, verdict: ClaimVerdict.Apply },
  // Applied after a read that named it: it would have been settled.
  { when: (f) => f.decidedThis, verdict: ClaimVerdict.None },
  { when: (_, a) => a === ClaimAnswer.Applied, verdict: ClaimVerdict.SettleApplied },
  { when: (_, a) => a === ClaimAnswer.Stopping || a === ClaimAnswer.CoreFailed, verdict: ClaimVerdict.Leave },
  { when: (f) => !f.held, verdict: ClaimVerdict.Leave },
  { when: () => true, verdict: ClaimVerdict.SettleRefused },
];

export function claimedDecisionVerdictFor(answer: number, facts: number): ClaimVerdict {
  if (answer < 0 || answer >= ClaimAnswer.End || facts < 0 || facts >= ClaimFact.End) return ClaimVerdict.None;
  const read = claimReadOf(facts);
  return DECISION_RULES.find((rule) => rule.when(read, answer as ClaimAnswer))!.verdict;
}

const START_RULES: readonly { readonly when: (f: ClaimRead, fate: FiledStartVerdict) => boolean; readonly verdict: ClaimVerdict }[] = [
  { when: (f) => f.approval || f.decidedRead || f.decidedThis, verdict: ClaimVerdict.None },
  { when: (_, fate) => fate === FiledStartVerdict.AskAdmitted, verdict: ClaimVerdict.None },
  { when: (f, fate) => fate === FiledStartVerdict.None && (f.closed || !f.held), verdict: ClaimVerdict.Leave },
  { when: (_, fate) => fate === FiledStartVerdict.None, verdict: ClaimVerdict.Apply },
  { when: (_, fate) => fate === FiledStartVerdict.Ran, verdict: ClaimVerdict.SettleApplied },
  { when: (_, fate) => fate === FiledStartVerdict.Left, verdict: ClaimVerdict.Leave },
  { when: (_, fate) => fate === FiledStartVerdict.Refused, verdict: ClaimVerdict.SettleRefused },
  { when: (f) => f.closed || !f.held, verdict: ClaimVerdict.Leave },
  { when: () => true, verdict: ClaimVerdict.TryAgain },
];

export function claimedStartVerdictFor(fate: number, facts: number): ClaimVerdict {
  if (fate < 0 || fate > FiledStartVerdict.Refused || facts < 0 || facts >= ClaimFact.End) return ClaimVerdict.None;
  return START_RULES.find((rule) => rule.when(claimReadOf(facts), fate as FiledStartVerdict))!.verdict;
}

// -- toolCallConcurrency -----------------------------------------------------------

/** The calls of a batch to start now: every call not started when there
 * is no limit, else as many as fit beside the ones running; none once the
 * session ended. Counted one call at a time, the simple way. */
export function toolCallsToStartFor(calls: number, started: number, settled: number, limit: number, finished: number): number {
  if (calls > Limit.InFlightMax || started > calls || settled > started || (finished !== 0 && finished !== 1)) return ToolCallCount.Invalid;
  if (finished === 1) return 0;
  let starting = 0;
  while (started + starting < calls && (limit === 0 || started + starting - settled < limit)) starting += 1;
  return starting;
}

// -- replaceFrom (0070's refusals) -----------------------------------------------

/** What a replacing preparation's transaction read. */
interface ReplacedRead {
  readonly row: boolean;
  readonly sameConversation: boolean;
  readonly ended: boolean;
  readonly inMemory: boolean;
}

const REPLACE_RULES: readonly { readonly when: (f: ReplacedRead) => boolean; readonly verdict: ReplaceVerdict }[] = [
  { when: (f) => !f.row && (f.sameConversation || f.ended), verdict: ReplaceVerdict.None },
  { when: (f) => f.row && !f.sameConversation, verdict: ReplaceVerdict.RefuseOtherConversation },
  { when: (f) => f.row && !f.ended, verdict: ReplaceVerdict.RefuseUnfinished },
  { when: (f) => f.inMemory, verdict: ReplaceVerdict.Replace },
  { when: (f) => f.row, verdict: ReplaceVerdict.RefuseNotInMemory },
  { when: () => true, verdict: ReplaceVerdict.RefuseUnknown },
];

export function replaceVerdictFor(facts: number): ReplaceVerdict {
  if (facts < 0 || facts >= ReplaceFact.End) return ReplaceVerdict.None;
  const read: ReplacedRead = {
    row: (facts & ReplaceFact.RowFound) !== 0,
    sameConversation: (facts & ReplaceFact.SameConversation) !== 0,
    ended: (facts & ReplaceFact.Ended) !== 0,
    inMemory: (facts & ReplaceFact.InMemory) !== 0,
  };
  return REPLACE_RULES.find((rule) => rule.when(read))!.verdict;
}

// -- one question per turn (0075, 0080) ------------------------------------------

/** The verdicts of a whole turn, computed the simple way: the first call
 * that waits and did not fail is the question; with one, every other call
 * that waits or needs approval is declined; without, every call that needs
 * approval is asked in one approval. */
export function turnVerdictsFor(calls: readonly { readonly waits: boolean; readonly needsApproval: boolean; readonly failed: boolean }[]): TurnCallVerdict[] {
  const question = calls.findIndex((call) => call.waits && !call.failed);
  return calls.map((call, index) => {
    if (question < 0) return call.needsApproval ? TurnCallVerdict.AskApproval : TurnCallVerdict.Run;
    if (index === question) return TurnCallVerdict.AskWait;
    return call.waits || call.needsApproval ? TurnCallVerdict.Decline : TurnCallVerdict.Run;
  });
}

/** One call's verdict from its facts: the turn the facts describe is
 * rebuilt (an earlier question when `WaitTaken`, a later one when the
 * turn waits and none was taken yet) and judged whole by `turnVerdictsFor`. */
export function turnCallVerdictFor(facts: number): TurnCallVerdict {
  if (facts < 0 || facts >= TurnCallFact.End) return TurnCallVerdict.None;
  const has = (fact: TurnCallFact): boolean => (facts & fact) !== 0;
  const call = { waits: has(TurnCallFact.Waits), needsApproval: has(TurnCallFact.NeedsApproval), failed: has(TurnCallFact.Failed) };
  const turnWaits = has(TurnCallFact.TurnWaits);
  const taken = has(TurnCallFact.WaitTaken);
  if (!turnWaits && (taken || (call.waits && !call.failed))) return TurnCallVerdict.None;
  const question = { waits: true, needsApproval: false, failed: false };
  if (taken) return turnVerdictsFor([question, call])[1]!;
  if (turnWaits && !(call.waits && !call.failed)) return turnVerdictsFor([call, question])[0]!;
  return turnVerdictsFor([call])[0]!;
}
