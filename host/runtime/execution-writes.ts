// The writes the core asks for while an execution runs (SPEC §4): the
// barrier before every model call and tool batch, the terminal commit, and
// the commit of an approval decision. Each is submitted to the store and
// its outcome posted back to the core as a message; a submission refused on
// the spot is reported at once (SubmissionRefused). The coordinator carries
// the effects out through these functions.

import { CommitOutcome, MessageKind as M, OutcomeType, SessionEnding, Submission } from "../../assembly/abi.js";
import { ApprovalMismatchError, ExecutionRehydrationRequiredError, PhronomyError, StoreError } from "../errors.js";
import type { Json, JournalRecord, OutcomeName, StepRecord } from "../store/records.js";
import { isOutcomeUnknown } from "../store/store.js";
import { approvalCommitReadBack } from "./approval-read-back.js";
import type { CoordinatorCalls } from "./coordinator-calls.js";
import type { ApprovalRequest } from "./events.js";
import { sessionOf } from "./execution-sessions.js";
import type { ExecutionEntry } from "./requests.js";
import { batchAfter, storedActionOf } from "./wait-decisions.js";
import { argumentsHashOf, asPhronomyError, type Session } from "./session.js";

/** Effect SubmitProviderBarrier: the durable barrier before a model call. */
export function submitProviderBarrier(calls: CoordinatorCalls, slot: number, sessionNumber: number, expectedRevision: number): void {
  const entry = calls.entryAt(slot);
  const session = sessionOf(calls, slot, sessionNumber);
  if (!entry || !session) return;
  const steps = session.pendingSteps();
  const written = entry.start.firstBarrier;
  if (written !== undefined) {
    // Written with the preparation: the core asks for exactly that barrier
    // (the first thing an installed execution does), so it is acknowledged
    // as the store would have, on a later turn of the loop.
    entry.start.firstBarrier = undefined;
    if (expectedRevision === written.revision - 1 && steps.length === 0) {
      session.adoptModelCallId(written.callId);
      calls.post(() =>
        calls.apply(M.ProviderDispatchReady, slot, entry.generation, sessionNumber, expectedRevision, CommitOutcome.Committed, written.revision),
      );
      return;
    }
    // Anything else is a bug; the barrier below then finds the row moved on
    // (compare-and-set) and the execution is held for recovery, nothing overwritten.
    calls.settings.logger.warn(
      `[phronomy] execution ${entry.executionId}: the first provider barrier was written with its preparation, but the core asked for revision ${expectedRevision} with ${steps.length} pending steps`,
    );
  }
  const callId = session.nextModelCallId();
  const runningSince = session.runningSince;
  submitBarrier(
    calls,
    entry,
    session,
    Submission.ProviderBarrier,
    () =>
      calls.settings.store.run({
        type: "providerBarrier",
        executionId: entry.executionId,
        expectedRevision,
        callId,
        steps,
        usage: session.usage,
        turns: session.turns,
        at: calls.settings.now(),
        ...(runningSince !== undefined ? { runningSince } : {}),
      }),
    (outcome, revision) => {
      if (outcome === CommitOutcome.Committed) session.acknowledgeSteps(steps.length, runningSince);
      calls.apply(M.ProviderDispatchReady, slot, entry.generation, sessionNumber, expectedRevision, outcome, revision);
    },
  );
}

/** Effect SubmitToolBarrier: the durable barrier before a tool batch. */
export function submitToolBarrier(calls: CoordinatorCalls, slot: number, sessionNumber: number, expectedRevision: number): void {
  const entry = calls.entryAt(slot);
  const session = sessionOf(calls, slot, sessionNumber);
  if (!entry || !session) return;
  const steps = session.pendingSteps();
  const toolBatch = session.toolBatch();
  const runningSince = session.runningSince;
  submitBarrier(
    calls,
    entry,
    session,
    Submission.ToolBarrier,
    () =>
      calls.settings.store.run({
        type: "toolBarrier",
        executionId: entry.executionId,
        expectedRevision,
        toolBatch,
        steps,
        usage: session.usage,
        turns: session.turns,
        at: calls.settings.now(),
        ...(runningSince !== undefined ? { runningSince } : {}),
      }),
    (outcome, revision) => {
      if (outcome === CommitOutcome.Committed) session.acknowledgeSteps(steps.length, runningSince);
      calls.apply(M.ToolDispatchReady, slot, entry.generation, sessionNumber, expectedRevision, outcome, revision, toolBatch.length);
    },
  );
}

/** Submits a barrier and posts its outcome; a refused submission is
 * reported to the core at once. */
function submitBarrier(
  calls: CoordinatorCalls,
  entry: ExecutionEntry,
  session: Session,
  submission: Submission,
  write: () => Promise<{ revision: number }>,
  ready: (outcome: CommitOutcome, revision: number) => void,
): void {
  let written: Promise<{ revision: number }>;
  try {
    written = write();
  } catch (error) {
    entry.storeError = asPhronomyError(error, "STORE");
    calls.apply(M.SubmissionRefused, submission, entry.slot, entry.generation, session.number, 0);
    return;
  }
  written.then(
    ({ revision }) => calls.post(() => ready(CommitOutcome.Committed, revision)),
    (error: unknown) =>
      calls.post(() => {
        entry.storeError = asPhronomyError(error, "STORE");
        // Outcome unknown (the store's worker died holding it): only the
        // durable row can tell, so the execution is held for recovery.
        const outcome =
          error instanceof ExecutionRehydrationRequiredError || isOutcomeUnknown(error) ? CommitOutcome.RehydrationRequired : CommitOutcome.StoreFailed;
        ready(outcome, 0);
      }),
  );
}

/** Effect SubmitTerminalCommit: the execution's outcome, with its last steps. */
export function submitTerminalCommit(calls: CoordinatorCalls, slot: number, sessionNumber: number, expectedRevision: number): void {
  const entry = calls.entryAt(slot);
  const session = sessionOf(calls, slot, sessionNumber);
  if (!entry || !session?.terminal) return;
  const terminal = session.terminal;
  const outcome = outcomeName(terminal.ending);
  const steps: StepRecord[] = session.pendingSteps();
  const journal: JournalRecord[] =
    outcome === "completed" && typeof terminal.output === "string"
      ? [{ executionId: entry.executionId, role: "assistant", content: terminal.output, at: calls.settings.now() }]
      : [];
  let written: Promise<{ revision: number }>;
  try {
    written = calls.settings.store.run({
      type: "terminalCommit",
      executionId: entry.executionId,
      expectedRevision,
      outcome,
      output: terminal.output,
      error: terminal.error ? terminal.error.toRecord() : null,
      usage: session.usage,
      approvalRequest: (terminal.approvalRequest ?? null) as unknown as Json,
      handoff: (terminal.handoff ?? null) as unknown as Json,
      steps,
      journal,
      at: calls.settings.now(),
      ...(outcome === "suspended" ? { toolBatch: session.toolBatch() } : {}),
      ...(session.cancelRequested || entry.cancelById !== undefined ? { cancelRequested: true as const } : {}),
      ...(entry.callbackFailure !== undefined ? { callbackFailure: entry.callbackFailure } : {}),
    });
  } catch (error) {
    entry.storeError = asPhronomyError(error, "STORE");
    calls.apply(M.SubmissionRefused, Submission.TerminalCommit, slot, entry.generation, sessionNumber, 0);
    return;
  }
  written.then(
    ({ revision }) =>
      calls.post(() => {
        calls.apply(M.TerminalCommitReady, slot, entry.generation, sessionNumber, expectedRevision, outcomeType(outcome), revision);
      }),
    (error: unknown) =>
      calls.post(() => {
        entry.storeError = asPhronomyError(error, "STORE");
        calls.apply(M.TerminalCommitReady, slot, entry.generation, sessionNumber, expectedRevision, OutcomeType.StoreFailed, 0);
      }),
  );
}

/** Effect SubmitApprovalCommit: the decision is written only when the
 * durable batch still hashes to what the approval request was bound to. */
export function submitApprovalCommit(calls: CoordinatorCalls, slot: number, expectedRevision: number, handle: number): void {
  const entry = calls.entryAt(slot);
  const request = calls.requests.get(handle);
  if (!entry || request?.type !== "resume") return;
  const refuse = (error: PhronomyError): void =>
    calls.post(() => {
      request.error = error;
      calls.apply(M.SubmissionRefused, Submission.ApprovalCommit, slot, entry.generation, 0, handle);
      calls.suspensionKept(entry);
    });
  const ready = (outcome: CommitOutcome, revision: number): void =>
    calls.post(() => {
      calls.apply(M.ResumeCommitReady, slot, entry.generation, expectedRevision, outcome, revision, request.approved ? 1 : 0, handle);
      if (outcome === CommitOutcome.StoreFailed) calls.suspensionKept(entry);
    });
  entry.resumeRow = undefined;
  // Just read back for this decision (an execution let go of while
  // suspended, docs/decisions/0066), at the revision committed against.
  const filledFrom = entry.filledFrom;
  entry.filledFrom = undefined;
  const rowRead = filledFrom?.revision === expectedRevision ? Promise.resolve(filledFrom) : calls.settings.store.getExecution(entry.executionId);
  rowRead.then(
    (row) => {
      const batch = row?.metadata.toolBatch ?? [];
      const argumentsHash = argumentsHashOf(batch);
      const approval = row?.approvalRequest as unknown as ApprovalRequest | null;
      if (!row || !approval || approval.argumentsHash !== argumentsHash) {
        return refuse(
          new ApprovalMismatchError(
            `the tool calls of execution ${entry.executionId} changed since approval ${request.approvalId} was requested; nothing was decided`,
            { executionId: entry.executionId, agentId: entry.agent.id },
          ),
        );
      }
      // The batch the decision leaves: edited arguments, a result given in
      // place of a call, calls a typed wait held back (decision 0075).
      const rewritten = request.action !== undefined || approval.declinedCalls !== undefined;
      const toolBatch = rewritten ? batchAfter(batch, approval, request.action) : undefined;
      const decidedRow = toolBatch === undefined ? row : { ...row, metadata: { ...row.metadata, toolBatch } };
      const action = storedActionOf(request.action);
      let written: Promise<{ revision: number }>;
      try {
        written = calls.settings.store.run({
          type: "approvalCommit",
          executionId: entry.executionId,
          expectedRevision,
          approvalId: request.approvalId,
          approved: request.approved,
          reason: request.reason,
          argumentsHash,
          at: calls.settings.now(),
          ...(action !== undefined ? { action } : {}),
          ...(request.decidedBy != null ? { decidedBy: request.decidedBy } : {}),
          ...(request.filedAs != null ? { filedAs: request.filedAs } : {}),
          ...(toolBatch !== undefined ? { toolBatch } : {}),
        });
      } catch (error) {
        return refuse(asPhronomyError(error, "STORE"));
      }
      written.then(
        ({ revision }) => {
          entry.resumeRow = decidedRow;
          ready(CommitOutcome.Committed, revision);
        },
        (error: unknown) => {
          if (error instanceof ApprovalMismatchError) return refuse(error);
          const failure = asPhronomyError(error, "STORE");
          const held = (): void => {
            entry.storeError = failure;
            ready(CommitOutcome.RehydrationRequired, 0);
          };
          if (error instanceof ExecutionRehydrationRequiredError || isOutcomeUnknown(error)) return held();
          // Written or not: the row says (docs/decisions/0057).
          void approvalCommitReadBack(calls.settings.store, { ...request, expectedRevision }).then(({ outcome, revision }) => {
            if (outcome === CommitOutcome.RehydrationRequired) return held();
            if (outcome === CommitOutcome.Committed) entry.resumeRow = decidedRow;
            else request.error = notWritten(entry, failure);
            ready(outcome, revision);
          });
        },
      );
    },
    (error: unknown) => refuse(asPhronomyError(error, "STORE")),
  );
}

function outcomeName(ending: SessionEnding): OutcomeName {
  switch (ending) {
    case SessionEnding.Completed:
      return "completed";
    case SessionEnding.Suspended:
      return "suspended";
    case SessionEnding.HandedOff:
      return "handed_off";
    case SessionEnding.CoordinationWait:
      return "coordination_wait";
    default:
      return "failed";
  }
}

function outcomeType(outcome: OutcomeName): OutcomeType {
  switch (outcome) {
    case "completed":
      return OutcomeType.Completed;
    case "suspended":
      return OutcomeType.Suspended;
    case "handed_off":
      return OutcomeType.HandedOff;
    case "coordination_wait":
      return OutcomeType.CoordinationWait;
    case "failed":
      return OutcomeType.Failed;
  }
}

/** A decision whose approval commit wrote nothing: still pending (docs/decisions/0057). */
function notWritten(entry: ExecutionEntry, failure: PhronomyError): StoreError {
  const context = { executionId: entry.executionId, agentId: entry.agent.id, cause: failure };
  const sentence = `the decision on execution ${entry.executionId} was not written (${failure.message}); it is still pending: send the same decision again`;
  return new StoreError(sentence, context);
}
