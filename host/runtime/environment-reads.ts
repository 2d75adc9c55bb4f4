// What an environment reads for its callers: executions and their rows
// (a message still queued reads as status `queued`), timelines, approvals
// waiting, chat streams of runs or executions (docs/decisions/0036), and a
// conversation's history with every part its answers showed (0073).
// In the environment layer: the chat streams are built on the runtime.

import type { UIMessage } from "ai";
import { ChatStreams, type ChatChunk, type StreamOptions } from "../chat/chat-stream.js";
import { chatHistory } from "../chat/history.js";
import { checkListFilter, executionStatusNames } from "../store/check-operation.js";
import type { ExecutionListFilter, ExecutionRow, StoredStep } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";
import type { PendingApproval } from "./admin.js";
import type { Coordinator } from "./coordinator.js";
import type { ApprovalRequest } from "./events.js";
import { parentOfRow } from "./child-waits.js";
import type { HistoryMetadata } from "./journal-messages.js";
import { executionOrQueued, listWithQueued } from "./queued-rows.js";
import { withAttempts } from "./retry.js";
import type { Run } from "./run.js";

/** What the reads ask of their environment (environment.ts wires it). */
export interface EnvironmentReadsHost {
  readonly store: ExecutionStore;
  readonly coordinator: Coordinator;
  closed(): boolean;
  wait(executionId: string): Run;
}

/** `env.executions()`'s filter, `recovery_required` included. */
export type ExecutionsFilter = ExecutionListFilter | (Omit<ExecutionListFilter, "status"> & { status: "recovery_required" });

export class EnvironmentReads {
  /** Chat streams served here (docs/decisions/0036). */
  private chatStreams: ChatStreams | undefined;

  constructor(private readonly host: EnvironmentReadsHost) {}

  async executions(filter: ExecutionsFilter): Promise<ExecutionRow[]> {
    checkListFilter(filter, "env.executions()", [...executionStatusNames, "queued", "recovery_required"]);
    const { store, coordinator } = this.host;
    if (filter.status !== "recovery_required") return listWithQueued(store, filter as ExecutionListFilter);
    const ids = new Set(coordinator.recoveryRequiredEntriesOf().map((entry) => entry.executionId));
    const rows = await store.unfinishedExecutions();
    return rows.filter(
      (row) =>
        ids.has(row.executionId)
        && (filter.agentId === undefined || row.agentId === filter.agentId)
        && (filter.outcome === undefined || row.outcome === filter.outcome),
    );
  }

  execution(executionId: string): Promise<ExecutionRow | undefined> {
    return executionOrQueued(this.host.store, executionId);
  }

  async timeline(executionId: string): Promise<(StoredStep & { readonly attempt: number })[]> {
    return withAttempts(await this.host.store.listSteps(executionId));
  }

  async pendingApprovals(): Promise<PendingApproval[]> {
    const rows = await this.host.store.unfinishedExecutions();
    return rows
      .filter((row) => row.status === "suspended" && row.approvalRequest !== null)
      .map((row) => {
        const request = row.approvalRequest as unknown as ApprovalRequest;
        const parent = parentOfRow(row);
        return {
          executionId: row.executionId,
          agentId: row.agentId,
          kind: request.kind ?? "approval",
          ...(request.kind === "event" && request.key !== undefined ? { key: request.key } : {}),
          request,
          since: request.requestedAt,
          ...(request.dueAt !== undefined ? { dueAt: request.dueAt } : {}),
          ...(parent ? { parent } : {}),
        };
      })
      .sort((a, b) => a.since - b.since);
  }

  /** A conversation's last `limit` memory records as UI messages, each
   * answer still stored rebuilt from its timeline (chat/history.ts). */
  async history(agentId: string, limit: number): Promise<UIMessage<HistoryMetadata>[]> {
    const { store } = this.host;
    return chatHistory(await store.readJournal(agentId, limit), { execution: (id) => store.getExecution(id), timeline: (id) => store.listSteps(id) });
  }

  stream(target: Run | string, options: StreamOptions): Promise<ReadableStream<ChatChunk>> {
    const { store, coordinator } = this.host;
    this.chatStreams ??= new ChatStreams({
      execution: (executionId) => this.execution(executionId),
      timeline: (executionId) => store.listSteps(executionId),
      wait: (executionId) => this.host.wait(executionId),
      closed: () => this.host.closed(),
      storePath: store.path,
      logger: coordinator.settings.logger,
    });
    return this.chatStreams.stream(target, options);
  }
}
