// The reads every SQLite store object answers on its own connection — the
// owner (`SqliteStore`) and a visitor (`SqliteVisitorStore`) alike — each
// checked (ids, limits) and refused with `StoreError` once the object is
// closed. Reads run on the calling thread: SQLite answers them without
// waiting for a writer (WAL).

import { InvalidInputError, StoreError } from "../../errors.js";
import { checkId } from "../check-id.js";
import { checkListFilter } from "../check-operation.js";
import type { AgentRow, ExecutionListFilter, ExecutionRow, JournalRecord, StoredStep } from "../records.js";
import type { SqliteConnection } from "./driver.js";
import * as reads from "./reads.js";
import * as pages from "./pages.js";
import { checkCountsFilter, checkPageQuery, cursorsOf, type ExecutionCounts, type ExecutionPage, type ExecutionPageQuery } from "../execution-pages.js";
import * as queue from "./queue.js";
import type { QueuedMessage } from "../queue.js";
import { storeErrorOf } from "./transaction.js";
import * as schedules from "./schedules.js";
import { scheduleListMax, type ScheduleListFilter, type ScheduleRow } from "../schedule-records.js";

/** The reads of a SQLite store, shared by its owner and its visitors. */
export abstract class SqliteReadableStore {
  protected constructor(
    /** The store file's absolute path. */
    readonly path: string,
    protected readonly connection: SqliteConnection,
  ) {}

  /** Why reads are refused now (the object is closed), or undefined. */
  protected abstract closedMessage(): string | undefined;

  /** The failure that stopped the store (its file removed or replaced, its
   * worker lost for good), or undefined: reads are refused with it too, since
   * what the connection still sees (an unlinked file) is no longer the
   * store's (docs/decisions/0021). */
  protected storeFailure(): StoreError | undefined {
    return undefined;
  }

  /** The agent's root, if it has one. */
  getAgent(agentId: string): Promise<AgentRow | undefined> {
    return this.read(() => reads.getAgent(this.connection, checkId(agentId, "agentId")));
  }

  /** The execution's row, if the store has it. */
  getExecution(executionId: string): Promise<ExecutionRow | undefined> {
    return this.read(() => reads.getExecution(this.connection, checkId(executionId, "executionId")));
  }

  /** Executions, newest first, filtered. */
  listExecutions(filter: ExecutionListFilter = {}): Promise<ExecutionRow[]> {
    return this.read(() => {
      checkListFilter(filter, "listExecutions");
      checkLimit(filter.limit, reads.executionListMax, "listExecutions limit");
      return reads.listExecutions(this.connection, filter);
    });
  }

  /** One page of executions, newest first, by cursor, filtered and
   * searched (docs/decisions/0082). */
  pageExecutions(query: ExecutionPageQuery): Promise<ExecutionPage> {
    return this.read(() => {
      const checked = checkPageQuery(query, "pageExecutions");
      const { rows, more } = pages.pageExecutions(this.connection, checked);
      return { rows, ...cursorsOf(checked, rows, more) };
    });
  }

  /** Executions per status and outcome over the whole store (or one agent's). */
  countExecutions(filter: { readonly agentId?: string } = {}): Promise<ExecutionCounts> {
    return this.read(() => pages.countExecutions(this.connection, checkCountsFilter(filter, "countExecutions")));
  }

  /** The execution's timeline, in order. */
  listSteps(executionId: string): Promise<StoredStep[]> {
    return this.read(() => reads.listSteps(this.connection, checkId(executionId, "executionId")));
  }

  /** The agent's last `limit` journal records, oldest first. */
  readJournal(agentId: string, limit: number): Promise<JournalRecord[]> {
    return this.read(() => {
      checkLimit(limit, reads.journalReadMax, "readJournal limit");
      return reads.readJournal(this.connection, checkId(agentId, "agentId"), limit);
    });
  }

  /** Every execution not terminal (suspended included), oldest first. */
  unfinishedExecutions(): Promise<ExecutionRow[]> {
    return this.read(() => reads.unfinishedExecutions(this.connection));
  }

  /** @internal One agent's messages waiting behind its busy conversation, in order (`../queue.ts`). */
  queuedMessages(agentId: string): Promise<QueuedMessage[]> {
    return this.read(() => queue.queuedMessages(this.connection, checkId(agentId, "agentId")));
  }

  /** @internal The head of every agent's queue (`../queue.ts`). */
  queueHeads(): Promise<QueuedMessage[]> {
    return this.read(() => queue.queueHeads(this.connection));
  }

  /** @internal A queued message by its execution id. */
  queuedMessage(executionId: string): Promise<QueuedMessage | undefined> {
    return this.read(() => queue.queuedMessage(this.connection, checkId(executionId, "executionId")));
  }

  /** @internal Queued messages, of one agent or all, at most `limit`. */
  listQueuedMessages(filter: { readonly agentId?: string; readonly limit: number }): Promise<QueuedMessage[]> {
    return this.read(() => {
      checkLimit(filter.limit, reads.executionListMax, "listQueuedMessages limit");
      return queue.listQueuedMessages(this.connection, {
        limit: filter.limit,
        ...(filter.agentId === undefined ? {} : { agentId: checkId(filter.agentId, "agentId") }),
      });
    });
  }

  /** @internal A schedule by id (docs/decisions/0078): the owner and a visitor read it alike. */
  getSchedule(scheduleId: string): Promise<ScheduleRow | undefined> {
    return this.read(() => schedules.getSchedule(this.connection, checkId(scheduleId, "scheduleId")));
  }

  /** @internal Schedules, newest first, filtered. */
  listSchedules(filter: ScheduleListFilter): Promise<ScheduleRow[]> {
    return this.read(() => schedules.listSchedules(this.connection, filter, filter.limit ?? scheduleListMax));
  }

  protected read<T>(body: () => T): Promise<T> {
    try {
      const closed = this.closedMessage();
      if (closed !== undefined) throw new StoreError(closed);
      const failure = this.storeFailure();
      if (failure !== undefined) throw failure;
      return Promise.resolve(body());
    } catch (error) {
      return Promise.reject(storeErrorOf(error, this.path));
    }
  }
}

export function checkLimit(limit: number | undefined, maximum: number, what: string): void {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > maximum)) {
    throw new InvalidInputError(`${what} must be an integer from 1 to ${maximum}, got ${String(limit)}`);
  }
}
