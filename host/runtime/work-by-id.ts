// Cancels and retries by execution id (docs/decisions/0026): what
// `env.cancel` and `env.retry` reach here — the execution live here, a
// message queued, a start filed for another process, the inbox that files
// the cancel or retry for the process that runs the conversation — and the
// same for a cancel or retry filed elsewhere and claimed here. Where one
// goes with no conversation here to ask is the core's verdict
// (`placeById`, by-id-placement.ts), as for a decision and a wait.

import { AdmissionSource } from "../../assembly/abi.js";
import { CancellationError } from "../errors.js";
import { transferError } from "../store/error-transfer.js";
import type { ExecutionRow } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";
import { placeById, type ByIdPlacement, type ByIdSource } from "./by-id-placement.js";
import { cancelById, checkCancel, type CancelHost, type CancelOptions, type CancelResult } from "./cancel-by-id.js";
import type { ControlLoop } from "./control-loop.js";
import type { ConversationQueues } from "./conversation-queue.js";
import type { Conversations } from "./conversations.js";
import type { Coordinator } from "./coordinator.js";
import { settleWaiterWithError } from "./delivery.js";
import type { InboxClaims } from "./inbox-claims.js";
import { executionOrQueued } from "./queued-rows.js";
import { startInboxStoreOf } from "./remote-start.js";
import { checkRetryOptions, retryById, type RetryHost, type RetryOptions } from "./retry.js";
import { Waiter, type Run } from "./run.js";
import { asPhronomyError } from "./session.js";

/** What cancels and retries by id ask of their environment (environment.ts wires it). */
export interface WorkByIdHost {
  readonly store: ExecutionStore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  readonly conversations: Conversations;
  readonly queues: Pick<ConversationQueues, "cancelQueued" | "admitRetry">;
  readonly visitor: boolean;
  readonly inbox: Pick<InboxClaims, "remoteResumes" | "remoteStarts" | "filesStarts">;
  assertOpen(what: string): void;
  assertStoreWritable(what: string): void;
}

export class WorkById {
  constructor(private readonly host: WorkByIdHost) {}

  /** `env.cancel`: checked, then cancelled here or filed. */
  cancel(executionId: string, options: CancelOptions): Promise<CancelResult> {
    checkCancel(executionId, options);
    this.host.assertOpen(`the cancel of execution ${executionId}`);
    return cancelById(this.cancelHost(), executionId, options.reason);
  }

  /** `env.retry`: a refused retry is a Run that settles with the refusal. */
  retry(executionId: string, options: RetryOptions): Run {
    try {
      checkRetryOptions(executionId, options);
      this.host.assertOpen(`the retry of execution ${executionId}`);
      this.host.assertStoreWritable(`the retry of execution ${executionId}`);
    } catch (error) {
      const waiter = new Waiter("", typeof options?.onEvent === "function" ? options.onEvent : undefined);
      settleWaiterWithError(waiter, asPhronomyError(error, "INTERNAL"), this.host.coordinator.settings);
      return waiter;
    }
    return retryById(this.retryHost(), executionId, options);
  }

  /** Where an operation by id on the conversation `agentId` goes with no
   * conversation here to ask: the core's verdict on the facts read now.
   * `conversationHere`: it is live here, or its definition is defined here. */
  place(source: ByIdSource, agentId: string, conversationHere: boolean): Promise<ByIdPlacement> {
    const { store, visitor, coordinator, inbox } = this.host;
    return placeById({ store, visitor, core: coordinator.settings.core, inbox: () => inbox.remoteResumes }, source, agentId, conversationHere);
  }

  /** Where a wait on an execution running but not live here goes: followed
   * at the process that runs it, or read here. */
  placeWait(agentId: string): Promise<ByIdPlacement> {
    return this.place(AdmissionSource.Observe, agentId, this.host.conversations.liveEntry(agentId) !== undefined);
  }

  cancelHost(): CancelHost {
    const { coordinator, loop, store, conversations, queues, inbox } = this.host;
    return {
      coordinator,
      loop,
      store,
      placement: (row) =>
        this.place(AdmissionSource.Cancel, row.agentId, conversations.liveEntry(row.agentId) !== undefined || conversations.kindOfRow(row) !== undefined),
      cancelQueued: (executionId, reason) => queues.cancelQueued(executionId, reason),
      readRow: (executionId) => executionOrQueued(store, executionId),
      // Any process that may write may cancel a filed start, one that takes
      // no share (the CLI's) included; a Run here following it settles now.
      ...(inbox.filesStarts()
        ? {
            cancelFiledStart: (executionId: string, reason: string | undefined) => this.cancelFiledStart(executionId, reason),
            cancelledQueued: (row: ExecutionRow) =>
              inbox.remoteStarts?.cancelledHere({
                executionId: row.executionId,
                execution: row,
                queued: false,
                decisionState: undefined,
                decisionError: null,
                steps: [],
              }),
          }
        : {}),
    };
  }

  private async cancelFiledStart(executionId: string, reason: string | undefined) {
    const error = JSON.stringify(transferError(new CancellationError({ executionId }, reason)));
    const found = await startInboxStoreOf(this.host.store)!.cancelFiledStart(executionId, error, Date.now());
    // Committed: a Run here following the start settles now (docs/decisions/0047).
    if (found?.state === "cancelled")
      this.host.inbox.remoteStarts?.cancelledHere({
        executionId,
        execution: undefined,
        queued: false,
        decisionState: "refused",
        decisionError: error,
        steps: [],
      });
    return found;
  }

  retryHost(): RetryHost {
    const { coordinator, loop, store, conversations, queues } = this.host;
    return {
      coordinator,
      loop,
      store,
      queues,
      useConversation: (row) => {
        const kind = conversations.liveKind(row.agentId) ?? conversations.kindOfRow(row);
        return kind === undefined ? undefined : conversations.use(row.agentId, kind);
      },
      placement: (row) => this.place(AdmissionSource.Retry, row.agentId, (conversations.liveKind(row.agentId) ?? conversations.kindOfRow(row)) !== undefined),
    };
  }
}
