// A visitor of a SQLite store (SPEC §4.3 "one owner, many visitors",
// docs/decisions/0015-sqlite-visitors.md): another process — the CLI while
// an application owns the store, a dashboard — reads the store and files
// approval decisions into its inbox, beside the live owner and without its
// ownership lock. It implements `ExecutionStore` (reads) and the filer's
// half of the approval inbox; the owner applies what it files.
//
// Rules kept here:
// * Reads go through a read-only connection (WAL: they never block the
//   owner, nor wait for it).
// * A visitor never writes executions: `run`, `ensureAgent`, `closeAgent`
//   and `purgeAgent` are refused with `StoreError` (details.reason
//   `visitor`), and so are claiming and settling decisions (the owner's).
// * Its writes — filing a decision, sending a signal, cancelling a
//   schedule or claiming a run now for the owner (docs/decisions/0097) —
//   go through a second connection opened on the first one and used for
//   nothing else; none touches an execution's rows.
//
//   const visitor = await SqliteStore.openVisitor("./agents.db");
//   const rows = await visitor.listExecutions({ status: "suspended" });
//   await visitor.close();

import { StoreError } from "../errors.js";
import { checkId } from "./check-id.js";
import type { ApprovalDecided, DecisionFiling, DecisionProgress, FiledDecision } from "./inbox-records.js";
import type { AgentRow, PurgeAgentResult, StoreOperation, StoreResult } from "./records.js";
import type { SqliteConnection } from "./sqlite/driver.js";
import * as signals from "./sqlite/signals.js";
import * as schedules from "./sqlite/schedules.js";
import type { ScheduleClaim, ScheduleRow } from "./schedule-records.js";
import type { SignalSending, SignalSent } from "./signal-records.js";
import * as inbox from "./sqlite/inbox.js";
import { hostName, readOwner } from "./sqlite/owner-file.js";
import { openInboxConnection, openVisitorConnection } from "./sqlite/visitor-connection.js";
import { checkPath } from "./sqlite/store-path.js";
import { SqliteReadableStore } from "./sqlite/readable-store.js";
import type { ExecutionStore } from "./store.js";
import type { StoreCapabilities } from "./capabilities.js";

/** A SQLite store opened beside its live owner (`SqliteStore.openVisitor`,
 * docs/decisions/0015): reads, and decisions and cancels filed in the
 * approval inbox for the owner to apply; every other write is refused. */
export class SqliteVisitorStore extends SqliteReadableStore implements ExecutionStore {
  /** Marks a visitor for `Phronomy.open` (no starts, no recovery). */
  readonly visitor = true;
  /** Files decisions and reads the queue; owns nothing, so claims nothing
   * (its `claimDecisions` refuses). */
  readonly capabilities: StoreCapabilities = {
    leases: false,
    partitions: false,
    approvalInbox: true,
    startInbox: false,
    queue: false,
    queueReads: true,
    pruning: false,
    pages: true,
    signals: true,
    scheduleReads: true,
    scheduleActions: true,
  };
  private inboxConnection: SqliteConnection | undefined;
  private closed = false;

  private constructor(
    path: string,
    connection: SqliteConnection,
    private readonly filedBy: string,
  ) {
    super(path, connection);
  }

  /** Opens the store at `path` as a visitor: no ownership lock, a
   * read-only connection. Rejects with `StoreError` when there is no store
   * there, it is not a Phronomy store, or its schema is not this
   * version's (older: its owner must migrate it first). */
  static open(path: string): Promise<SqliteVisitorStore> {
    try {
      const absolutePath = checkPath(path);
      const connection = openVisitorConnection(absolutePath);
      // hostName, not os.hostname(): Deno throws without --allow-sys=hostname.
      return Promise.resolve(new SqliteVisitorStore(absolutePath, connection, `visitor ${process.pid} on ${hostName()}`));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  // -- writes: refused ----------------------------------------------------------------

  run<O extends StoreOperation>(operation: O): Promise<StoreResult<O>> {
    return this.refuse(`the store operation ${String((operation as { type?: unknown } | null)?.type)}`);
  }

  ensureAgent(agentId: string, _at?: number): Promise<AgentRow> {
    return this.refuse(`creating the root of agent "${agentId}"`);
  }

  closeAgent(agentId: string, _at?: number): Promise<AgentRow> {
    return this.refuse(`closing agent "${agentId}"`);
  }

  purgeAgent(agentId: string): Promise<PurgeAgentResult> {
    return this.refuse(`purging agent "${agentId}"`);
  }

  /** @internal Refused: only the owner applies decisions. */
  claimDecisions(): Promise<never> {
    return this.refuse("claiming decisions from the approval inbox");
  }

  /** @internal Refused: only the owner applies decisions. */
  settleDecision(): Promise<never> {
    return this.refuse("settling a decision of the approval inbox");
  }

  private refuse(what: string): Promise<never> {
    const owner = readOwner(this.path);
    const who = owner === undefined ? "the process that owns it" : `its owner, process ${owner.pid} on ${owner.hostname}`;
    return Promise.reject(
      new StoreError(
        `the store at ${this.path} is open as a visitor, and a visitor never writes executions: ${what} was refused — do it in ${who}, or open the store as its owner once no process owns it`,
        { details: { reason: "visitor", storePath: this.path } },
      ),
    );
  }

  // -- the approval inbox (the filer's half) --------------------------------------------

  /** @internal Files a decision for the owner to apply, or refuses it at once
   * (nothing written) as the owner would (`sqlite/inbox.ts`). */
  fileDecision(filing: Omit<DecisionFiling, "filedBy">): Promise<FiledDecision> {
    return this.read(() => {
      this.inboxConnection ??= openInboxConnection(this.path);
      return inbox.fileDecision(this.inboxConnection, { ...filing, filedBy: this.filedBy });
    });
  }

  /** @internal Finds the wait with the signal's key (the caller files the
   * signal for the owner), or stores the signal (docs/decisions/0077). */
  sendSignal(sending: SignalSending): Promise<SignalSent> {
    return this.read(() => {
      this.inboxConnection ??= openInboxConnection(this.path);
      return signals.sendSignal(this.inboxConnection, sending);
    });
  }

  // -- schedules (docs/decisions/0097): a cancel, and a run now claimed for the owner --

  /** @internal Cancels a schedule: one compare-and-set on its row, as the
   * owner's own cancel (a schedule is not an execution). */
  cancelSchedule(scheduleId: string, at: number): Promise<ScheduleRow | undefined> {
    return this.read(() => {
      this.inboxConnection ??= openInboxConnection(this.path);
      return schedules.cancelSchedule(this.inboxConnection, checkId(scheduleId, "scheduleId"), at);
    });
  }

  /** @internal Claims firings for the owner to start: the runtime asks
   * only for a run now due at once, which the owner's sweep claims again
   * and starts (its key fixed by the slot claimed here). */
  claimSchedules(claims: readonly ScheduleClaim[]): Promise<ScheduleRow[]> {
    return this.read(() => {
      this.inboxConnection ??= openInboxConnection(this.path);
      return schedules.claimSchedules(this.inboxConnection, claims, Date.now());
    });
  }

  /** @internal Refused: only the owner's waits take stored signals. */
  takeStoredSignal(): Promise<never> {
    return this.refuse("taking a stored signal");
  }

  /** @internal Refused: only the owner's waits take stored signals. */
  dropSignal(): Promise<never> {
    return this.refuse("dropping a stored signal");
  }

  /** @internal Where filed decisions are: waiting, claimed, applied or refused. */
  readDecisions(decisionIds: readonly string[]): Promise<DecisionProgress[]> {
    return this.read(() => inbox.readDecisions(this.connection, decisionIds));
  }

  /** @internal The decision on an approval, once the owner applied one. */
  approvalDecided(executionId: string, approvalId: string): Promise<ApprovalDecided | undefined> {
    return this.read(() => inbox.approvalDecided(this.connection, checkId(executionId, "executionId"), approvalId));
  }

  protected closedMessage(): string | undefined {
    return this.closed ? `the visitor of the store at ${this.path} is closed; open it again to read` : undefined;
  }

  /** Closes both connections. Idempotent. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    try {
      this.inboxConnection?.close();
    } finally {
      this.connection.close();
    }
    return Promise.resolve();
  }
}
