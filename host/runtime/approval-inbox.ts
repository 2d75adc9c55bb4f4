// The owner's side of the approval inbox (issue 7,
// docs/decisions/0011-approval-inbox.md): decisions filed by processes that
// do not own an agent are claimed here, by the process holding the agent's
// lease, and applied through the same local resume path as
// `agent.resume` on a live execution; each is then marked applied (the
// approval commit landed) or refused (with the error a local resume would
// have given).
//
// Rules kept here:
// * Whether an agent's inbox is drained — every decision claimed, or only
//   what a conversation not live here takes — is the core's answer
//   (`ConversationFlag.InboxOpen`, docs/decisions/0062 "The approval
//   inbox's readiness"), asked before every claim (`inboxOpen`): open once
//   its recovery under the lease held now has finished (a suspended
//   execution is live only after recovery reinstalled it, and a decision
//   applied before would be refused as "not live"), closed from a takeover
//   until that recovery is done. The core's `OpenInbox(drain)` wakes a
//   drain here (`inboxOpened`), its `CloseInbox` drops the claims of the epoch
//   lost (`inboxClosed`); nothing here decides it.
// * One drain per agent at a time; a wake-up during a drain runs another
//   pass after it (a decision filed meanwhile is not missed).
// * What a claim becomes is the core's (`claimedDecisionVerdict`,
//   `claimedStartVerdict`, docs/decisions/0102); the host reads the facts
//   it asks for and carries the verdict out. Its rules: a refusal caused by
//   this process losing the agent (lease lost, the environment shutting
//   down, its core failed) is not recorded: the decision stays claimed, and
//   the next owner claims it again and judges it. A decision claimed again
//   (a former owner claimed it and died) is first looked up in the
//   execution's timeline: if the former owner's approval commit landed, it
//   is marked applied without being applied twice.
// * A claim the database failed on (judging or marking it) is kept and
//   finished on the next pass, `settleRetryMs` later at the latest: nobody
//   else would finish a claim of this epoch, and its filer waits on it.
//   A decision already applied is never applied again, only marked.
// * A filed start (docs/decisions/0031) is claimed for a conversation not
//   live here too (it makes it live), and started through `agent.start`'s
//   own path under the execution id it was filed with, where the core's
//   `Admit` decides; its fate follows the core's verdict
//   (filed-start-fate.ts): run, waited for the conversation's recovery and
//   then run (as a start made here waits), left for the process that holds
//   the conversation (never recorded), or refused (recorded). Only a write
//   the store failed or refused for the lease is tried again here, while
//   the partition is held at the claim's epoch; else it is left for the
//   next owner's claim.

import { ClaimAnswer, ClaimFact, ClaimVerdict, FiledStartVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import type { PhronomyError } from "../errors.js";
import { transferError } from "../store/error-transfer.js";
import {
  claimBatchMax,
  type ApprovalDecided,
  type ClaimedDecision,
  DecisionFiling,
  DecisionProgress,
  DecisionSettlement,
  FiledDecision,
} from "../store/inbox-records.js";
import { capabilitiesOf } from "../store/capabilities.js";
import type { ExecutionStore } from "../store/store.js";
import { startTiming } from "../store/start-timing.js";
import type { FiledStartFate } from "./filed-start-fate.js";
import { claimAnswerOf } from "./claim-answer.js";
import type { Logger } from "./options.js";

export type { ClaimedDecision, DecisionProgress };

/** What the runtime needs of a store with an approval inbox (PostgreSQL). */
export interface InboxStore {
  fileDecision(filing: Omit<DecisionFiling, "filedBy">): Promise<FiledDecision>;
  /** `idleOnly`: only what a conversation not live here takes — retries
   * on SQLite, filed starts on PostgreSQL (docs/decisions/0031); a store
   * that does not serve idle conversations (`servesIdle` false) never gets it. */
  claimDecisions(agentId: string, idleOnly?: boolean): Promise<ClaimedDecision[]>;
  /** PostgreSQL: the filed starts of every partition held, in one
   * statement (docs/decisions/0047); the `startsFiled` signal says when. */
  claimFiledStarts?(): Promise<ClaimedDecision[]>;
  settleDecision(claim: ClaimedDecision, settlement: DecisionSettlement): Promise<boolean>;
  readDecisions(decisionIds: readonly string[]): Promise<DecisionProgress[]>;
  approvalDecided(executionId: string, approvalId: string): Promise<ApprovalDecided | undefined>;
}

/** The store's approval inbox, when it declares one. */
export function inboxStoreOf(store: ExecutionStore): InboxStore | undefined {
  return capabilitiesOf(store).approvalInbox ? (store as unknown as InboxStore) : undefined;
}

/** Applies one claimed decision through the local resume path: undefined
 * once its approval commit landed, or the refusal. */
export type ApplyDecision = (claim: ClaimedDecision) => Promise<PhronomyError | undefined>;

/** Starts one claimed filed start through `agent.start`'s path: its fate. */
export type ApplyStart = (claim: ClaimedDecision) => Promise<FiledStartFate>;

/** Grouped claim passes of filed starts under way at once: a start filed
 * while one pass waits for its answer is claimed by a second at once, not
 * a round trip later (docs/decisions/0068). Two: a third would wait for
 * both before its claims were judged anyway (filing order), and each
 * holds a pool connection. */
export const startPassesMax = 2;

/** How soon a settlement that failed to be written is tried again. */
export const settleRetryMs = 1_000;

export class InboxApplier {
  private readonly draining = new Map<string, Promise<void>>();
  private readonly wokenDuringDrain = new Set<string>();
  /** Claimed here, not finished because the database failed (settlement
   * undefined: not judged yet), by decision id. */
  private readonly unfinished = new Map<string, { readonly claim: ClaimedDecision; readonly settlement: DecisionSettlement | undefined }>();
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Filed starts are claimed all at once (`claimFiledStarts`), not per agent. */
  private readonly startsGrouped: boolean;
  /** Grouped claim passes under way (at most `startPassesMax`), the last
   * one begun, and whether another was asked for meanwhile. */
  private startPasses = 0;
  private lastStartPass: Promise<void> = Promise.resolve();
  private startsAgain = false;
  /** Per agent, the last of its filed starts being judged: an agent's
   * starts are judged one after another, in the order they were filed. */
  private readonly startChains = new Map<string, Promise<void>>();

  constructor(
    private readonly store: InboxStore,
    private readonly apply: ApplyDecision,
    private readonly applyStart: ApplyStart,
    /** Whether this process still holds the agent at that lease epoch. */
    private readonly holds: (agentId: string, epoch: number) => boolean,
    private readonly logger: Logger,
    /** Decides what each claim becomes (docs/decisions/0102). */
    private readonly core: Pick<ControlCore, "claimedDecisionVerdict" | "claimedStartVerdict">,
    /** Whether decisions of conversations not live here are claimed: a
     * SQLite owner's retries (every conversation of the store is its own),
     * a PostgreSQL owner's filed starts (docs/decisions/0031). */
    private readonly servesIdle = false,
    /** Whether this process may still hold the agent at that epoch (its
     * admission window lapsed, not yet renewed): a filed start whose write
     * the store refused meanwhile is tried again, not left claimed for nobody. */
    private readonly mayHold: (agentId: string, epoch: number) => boolean = holds,
    /** Whether every decision filed for the agent is claimed here now: the
     * core's `InboxOpen` (false for a conversation not live here). */
    private readonly inboxOpen: (agentId: string) => boolean = () => false,
  ) {
    this.startsGrouped = servesIdle && typeof store.claimFiledStarts === "function";
  }

  /** Starts may be filed for partitions held here (a notification, the
   * lease tick): one claim statement takes them all. A notification that
   * arrives while a pass is under way begins another at once, up to
   * `startPassesMax` (docs/decisions/0068); past that, one more pass
   * follows. Each claimed start is judged on its agent's chain; the claim
   * does not wait for the judging. */
  startsFiled(): void {
    if (this.closed || !this.startsGrouped) return;
    if (this.startPasses >= startPassesMax) {
      this.startsAgain = true;
      return;
    }
    this.startPasses += 1;
    this.lastStartPass = this.claimStarts(this.lastStartPass)
      .catch((error: unknown) => this.logger.warn(`[phronomy] filed starts could not be claimed (the next poll tries again): ${messageOf(error)}`))
      .finally(() => {
        this.startPasses -= 1;
        if (this.startsAgain) {
          this.startsAgain = false;
          this.startsFiled();
        }
      });
  }

  /** One pass. Its first claim statement is sent at once, side by side
   * with the pass before (the database's row locks keep a start to one
   * claim: `SKIP LOCKED`, then the state checked again); what it claimed
   * is put on the agents' chains only once that pass has put all of its
   * own there, so an agent's starts are still judged in filing order. */
  private async claimStarts(before: Promise<void>): Promise<void> {
    const unfinished = [...this.unfinished].filter(([, { claim }]) => claim.kind === "start");
    for (const [decisionId] of unfinished) this.unfinished.delete(decisionId);
    let batch = timedClaims(() => this.store.claimFiledStarts!());
    // Rejected while the pass before finishes: handled below, when awaited.
    void batch.catch(() => undefined);
    await before;
    for (const [, { claim, settlement }] of unfinished) this.chainStart(claim, settlement);
    for (;;) {
      const claims = await batch;
      for (const claim of claims) this.chainStart(claim, undefined);
      if (claims.length < claimBatchMax || this.closed) return;
      batch = timedClaims(() => this.store.claimFiledStarts!());
    }
  }

  private chainStart(claim: ClaimedDecision, settlement: DecisionSettlement | undefined): void {
    const agentId = claim.agentId;
    const previous = this.startChains.get(agentId) ?? Promise.resolve();
    const next = previous
      .then(() => this.settle(claim, settlement))
      .catch((error: unknown) => {
        this.logger.warn(`[phronomy] the start filed as execution ${claim.executionId} could not be judged (the next poll tries again): ${messageOf(error)}`);
      });
    this.startChains.set(agentId, next);
    void next.finally(() => {
      if (this.startChains.get(agentId) === next) this.startChains.delete(agentId);
    });
  }

  /** The core's `OpenInbox`: decisions filed for the agent are claimed
   * here from now on; `drain` (some may wait: a takeover's, a suspended
   * execution's): claimed now. Else claimed when the store reports one (a
   * notification, the poll) — no claim per conversation used
   * (docs/decisions/0024) nor per suspension (0052). */
  inboxOpened(agentId: string, drain: boolean): void {
    if (drain) this.wake(agentId);
  }

  /** The core's `CloseInbox` (the lease changed hands, owned elsewhere, let
   * go): claims of the lost epoch are claimed again, and judged, under the
   * new one. A start's does not depend on the conversation being live
   * here: it is kept while its epoch is held (`judgeStart` checks it). */
  inboxClosed(agentId: string): void {
    for (const [decisionId, { claim }] of this.unfinished) if (claim.agentId === agentId && claim.kind !== "start") this.unfinished.delete(decisionId);
  }

  /** A decision may wait for the agent (a notification, a poll). An agent
   * not ready here — a conversation let go while idle (docs/decisions/0024)
   * — has only its retries claimed, when this owner serves idle ones: its
   * approvals and cancels wait until it is live and recovered. */
  wake(agentId: string): void {
    if (this.closed || (!this.inboxOpen(agentId) && (!this.servesIdle || this.startsGrouped))) return;
    if (this.draining.has(agentId)) {
      this.wokenDuringDrain.add(agentId);
      return;
    }
    const pass = this.drain(agentId)
      .catch((error: unknown) =>
        this.logger.warn(`[phronomy] the approval inbox of agent "${agentId}" could not be drained (the next poll tries again): ${messageOf(error)}`),
      )
      .finally(() => {
        this.draining.delete(agentId);
        if (this.wokenDuringDrain.delete(agentId)) this.wake(agentId);
      });
    this.draining.set(agentId, pass);
  }

  /** Stops draining and waits for the passes running now. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    while (this.draining.size > 0 || this.startPasses > 0 || this.startChains.size > 0) {
      await Promise.allSettled([...this.draining.values(), this.lastStartPass, ...this.startChains.values()]);
    }
  }

  /** Claims until nothing is left; a decision is claimed once per epoch,
   * so this ends. Claims a failed pass left unfinished go first. */
  private async drain(agentId: string): Promise<void> {
    for (const { claim, settlement } of [...this.unfinished.values()].filter((item) => item.claim.agentId === agentId)) {
      this.unfinished.delete(claim.decisionId);
      await this.settle(claim, settlement);
    }
    for (;;) {
      const claims = await timedClaims(() => (this.inboxOpen(agentId) ? this.store.claimDecisions(agentId) : this.store.claimDecisions(agentId, true)));
      if (claims.length === 0) return;
      for (const claim of claims) await this.settle(claim, undefined);
      if (this.closed) return;
    }
  }

  /** Judges the claim (unless judged already) and records the judgement;
   * a database failure keeps the claim for a retry — it stays claimed at
   * this epoch, so nobody else would finish it. */
  private async settle(claim: ClaimedDecision, judged: DecisionSettlement | undefined): Promise<void> {
    let settlement = judged;
    try {
      const judgement = settlement ?? (await this.judge(claim));
      if (judgement === "again") {
        this.unfinished.set(claim.decisionId, { claim, settlement: undefined });
        this.retrySoon();
        return;
      }
      settlement = judgement;
      if (settlement === undefined) return;
      const settled = await this.store.settleDecision(claim, settlement);
      startTiming.mark(claim.executionId, "settled");
      if (!settled)
        this.logger.debug?.(
          `[phronomy] decision ${claim.decisionId} on execution ${claim.executionId} was not marked here: agent "${claim.agentId}" moved to another owner, which judges it`,
        );
    } catch (error) {
      this.unfinished.set(claim.decisionId, { claim, settlement });
      this.logger.warn(
        `[phronomy] decision ${claim.decisionId} on execution ${claim.executionId} could not be ${settlement === undefined ? "judged" : "marked"} (trying again in ${settleRetryMs} ms): ${messageOf(error)}`,
      );
      this.retrySoon();
    }
  }

  private retrySoon(): void {
    if (this.closed || this.retryTimer !== undefined) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.startsGrouped && [...this.unfinished.values()].some(({ claim }) => claim.kind === "start")) this.startsFiled();
      for (const agentId of new Set([...this.unfinished.values()].map(({ claim }) => claim.agentId))) this.wake(agentId);
    }, settleRetryMs);
    this.retryTimer.unref();
  }

  /** Applies the claim; undefined: leave it claimed for the next owner;
   * "again": a start whose write the store failed or refused while this
   * process still holds the partition (tried again `settleRetryMs` later).
   * Each step is the core's (`claimedDecisionVerdict`, docs/decisions/0102):
   * the host reads the facts it asks for and carries the verdict out. */
  private async judge(claim: ClaimedDecision): Promise<DecisionSettlement | undefined | "again"> {
    if (claim.kind === "start") return this.judgeStart(claim);
    // A cancel is idempotent: claimed again, it is applied again; a retry
    // claimed again looks at the row's revision itself (`applyFiledRetry`).
    let facts = ((claim.kind ?? "approval") === "approval" ? ClaimFact.Approval : 0) | (claim.claims > 1 ? ClaimFact.ClaimedAgain : 0);
    let verdict = this.decisionVerdict(claim, ClaimAnswer.None, facts);
    if (verdict === ClaimVerdict.AskDecided) {
      const decided = await this.store.approvalDecided(claim.executionId, claim.approvalId);
      // Applied by a former owner only if its step names this decision: an
      // answer given here, or another filed one, is not this one (0086).
      facts |= ClaimFact.DecidedRead | (decided !== undefined && decided.filedAs === claim.decisionId ? ClaimFact.DecidedThis : 0);
      verdict = this.decisionVerdict(claim, ClaimAnswer.None, facts);
    }
    let refusal: PhronomyError | undefined;
    if (verdict === ClaimVerdict.Apply) {
      refusal = await this.apply(claim);
      // Shut down, its core failed (decision 0023), or no longer held at
      // the claim's epoch: the next owner's to judge, not refused.
      verdict = this.decisionVerdict(claim, claimAnswerOf(refusal), facts);
    }
    return settlementOf(verdict, refusal, `decision ${claim.decisionId}`);
  }

  /** The core's verdict on a claimed decision, told whether the inbox is
   * closing and the agent still held here at the claim's epoch. */
  private decisionVerdict(claim: ClaimedDecision, answer: ClaimAnswer, facts: number): ClaimVerdict {
    const now = (this.closed ? ClaimFact.Closed : 0) | (this.holds(claim.agentId, claim.claimedEpoch) ? ClaimFact.Held : 0);
    return this.core.claimedDecisionVerdict(answer, facts | now) as ClaimVerdict;
  }

  /** A filed start (docs/decisions/0031): run here under its execution id,
   * whose row the store admits once however often it is claimed. Its fate
   * is the core's verdict (filed-start-fate.ts): run, left for the process
   * that holds the conversation (the claim is that owner's, claimed again
   * at its higher epoch), or refused (recorded). A write the store failed
   * or refused for the lease is tried again while this process still holds
   * the partition at the claim's epoch (`claimedStartVerdict`). */
  private async judgeStart(claim: ClaimedDecision): Promise<DecisionSettlement | undefined | "again"> {
    if (this.startVerdict(claim, FiledStartVerdict.None) !== ClaimVerdict.Apply) return undefined;
    const fate = await this.applyStart(claim);
    const verdict = this.startVerdict(claim, fateVerdicts[fate.kind]);
    if (verdict === ClaimVerdict.SettleApplied) startTiming.mark(claim.executionId, "admitted");
    return settlementOf(verdict, fate.kind === "refused" ? fate.error : undefined, `the start filed as execution ${claim.executionId}`);
  }

  /** The core's verdict on a claimed start, told whether the inbox is
   * closing and the partition may still be held here at the claim's epoch. */
  private startVerdict(claim: ClaimedDecision, fate: FiledStartVerdict): ClaimVerdict {
    // Once closed the partition is not asked about: the core leaves it whatever it is.
    const now = this.closed ? ClaimFact.Closed : this.mayHold(claim.agentId, claim.claimedEpoch) ? ClaimFact.Held : 0;
    return this.core.claimedStartVerdict(fate, now) as ClaimVerdict;
  }
}

/** A start's fate (filed-start-fate.ts) as the core's verdict it came of. */
const fateVerdicts: Readonly<Record<FiledStartFate["kind"], FiledStartVerdict>> = {
  ran: FiledStartVerdict.Ran,
  left: FiledStartVerdict.Left,
  refused: FiledStartVerdict.Refused,
  write_failed: FiledStartVerdict.WriteFailed,
};

/** What `settle` records of the core's verdict on a claim. */
function settlementOf(verdict: ClaimVerdict, refusal: PhronomyError | undefined, what: string): DecisionSettlement | undefined | "again" {
  switch (verdict) {
    case ClaimVerdict.SettleApplied:
      return { applied: true };
    case ClaimVerdict.SettleRefused:
      if (refusal !== undefined) return { applied: false, error: transferError(refusal) };
      break;
    case ClaimVerdict.Leave:
      return undefined;
    case ClaimVerdict.TryAgain:
      return "again";
  }
  // The host passes its own facts: any other verdict is a broken assertion
  // (thrown: `settle` keeps the claim and judges it again).
  throw new Error(`the core answered no settlement (verdict ${verdict}) for ${what}`);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** One claim statement, its time and size sampled and each claim marked
 * for the filed-start profile (`start-timing.ts`, off unless a bench turns
 * it on). */
async function timedClaims(claim: () => Promise<ClaimedDecision[]>): Promise<ClaimedDecision[]> {
  const claiming = startTiming.now();
  const claims = await claim();
  startTiming.sample("owner claim ms", startTiming.now() - claiming);
  startTiming.sample("owner claim size", claims.length);
  for (const { executionId, agentId } of claims) {
    startTiming.mark(executionId, "claiming", claiming);
    startTiming.mark(executionId, "claimed");
    startTiming.markNotified(executionId, agentId);
  }
  return claims;
}
