// `env.admin`: the small administrative surface the CLI and the dashboard
// (docs/decisions/0038) share, so that neither reaches into the store or the
// runtime's internals. It reads — executions filtered and counted, one
// execution's timeline, approvals waiting, executions held for recovery,
// queued messages, who owns the store — and it acts — decide an approval,
// cancel, retry, recover — each through the same public path an
// application's code takes (`agent.resume`, `env.cancel`, `env.retry`,
// `env.recover`).
//
// Rules kept here:
// * Nothing here writes the store directly: every action is one of the
//   environment's public operations, judged exactly as it judges them.
// * `page()` and `counts()` read the whole store through its indexes
//   (`admin-pages.ts`, docs/decisions/0082); `executions()` is the older,
//   bounded listing: filters on time or id prefix apply to the newest
//   `adminScanMax` rows.
// * A decision is bound to the approval id and, when given, to the tool
//   arguments' hash the person saw: a different pending request is refused
//   with ApprovalMismatchError, nothing decided.

import { AdmissionSource, AdmissionVerdict } from "../../assembly/abi.js";
import { ApprovalMismatchError, InvalidInputError } from "../errors.js";
import type { ExecutionListFilter, ExecutionRow, ExecutionStatusName, OutcomeName, StoredStep } from "../store/records.js";
import { hostName, readOwner } from "../store/sqlite/owner-file.js";
import type { ExecutionStore } from "../store/store.js";
import type { Agent } from "./agent.js";
import type { ApprovalRequest } from "./events.js";
import type { ByIdPlacement, ByIdSource } from "./by-id-placement.js";
import { leasingStoreOf } from "./leases.js";
import { capabilitiesOf } from "../store/capabilities.js";
import {
  adminPage,
  bulkTargets,
  cancelMany,
  pagingStoreOf,
  retryMany,
  type AdminPage,
  type AdminPageQuery,
  type BulkAnswer,
  type BulkSelection,
} from "./admin-pages.js";
import type { RecoveredExecution } from "./recovery.js";
import type { CancelOptions, CancelResult } from "./cancel-by-id.js";
import type { RetryOptions } from "./retry.js";
import type { Run } from "./run.js";
import { validateResumeDecision, type ResumeDecision } from "./options.js";
import { Waiter } from "./run.js";

/** What a pending approval looks like to whoever decides it. */
export interface PendingApproval {
  /** The suspended execution. */
  readonly executionId: string;
  /** Its agent (conversation) id. */
  readonly agentId: string;
  /** `approval` (decide with { approvalId, approved }), `input` (a typed
   * wait: give it { waitId, value }; decision 0075), `event` (a keyed
   * wait: `env.signal(key, payload)`; decision 0077), `child` (waits for
   * its child execution, `request.child`; only the child's end resumes it,
   * decision 0079) or `timer` (fired at `dueAt`, or now with
   * { waitId, fire: true }; decision 0076). */
  readonly kind: "approval" | "input" | "event" | "child" | "timer";
  /** An event wait's key. */
  readonly key?: string;
  /** When it is due (a timer, or a wait's timeout; decision 0076). */
  readonly dueAt?: number;
  /** The tool calls waiting for the decision, and the approval id to decide them by. */
  readonly request: ApprovalRequest;
  /** When the execution suspended (ms since the epoch). */
  readonly since: number;
  /** The execution is a child (an `agentTool()` call of another, decision
   * 0079): its parent's execution, conversation and call. Answered the
   * same way as any other wait. */
  readonly parent?: { readonly executionId: string; readonly agentId: string; readonly callId: string };
}

/** What the admin surface asks of its environment (environment.ts
 * implements it): the public operations it goes through, and the store
 * it reads the owner of. Declared here because the environment makes
 * `env.admin`: this file imports nothing of it. */
export interface AdminHost {
  readonly store: ExecutionStore;
  readonly visitor: boolean;
  executions(filter: ExecutionListFilter | (Omit<ExecutionListFilter, "status"> & { status: "recovery_required" })): Promise<ExecutionRow[]>;
  execution(executionId: string): Promise<ExecutionRow | undefined>;
  timeline(executionId: string): Promise<(StoredStep & { readonly attempt: number })[]>;
  pendingApprovals(): Promise<PendingApproval[]>;
  agentHandle(agentId: string): Agent | undefined;
  /** The definitions made here, by name or id (agent-definitions.ts). */
  definedHandles(): ReadonlyMap<string, { readonly kind: "conversations" | "agent"; conversation(conversationId: string | undefined): Agent }>;
  /** Where an operation by id goes with no conversation here to ask: the
   * core's verdict on the facts read now (by-id-placement.ts). */
  placeById(source: ByIdSource, agentId: string, conversationHere: boolean): Promise<ByIdPlacement>;
  cancel(executionId: string, options?: CancelOptions): Promise<CancelResult>;
  retry(executionId: string, options?: RetryOptions): Run;
  recover(): Promise<RecoveredExecution[]>;
  assertOpen(what: string): void;
  assertOwner(what: string): void;
}

/** Rows a filter on time or id prefix, and the counts, look at: the newest
 * this many. A dashboard page shows far fewer; an older execution is named
 * by its full id. */
export const adminScanMax = 1_000;

/** Statuses and outcomes an admin listing filters by. */
export type AdminStatus = ExecutionStatusName | OutcomeName | "recovery_required";

/** Which executions `env.admin.executions()` lists. */
export interface AdminExecutionQuery {
  /** A durable status (`active`, `suspended`, …), an outcome (`completed`,
   * `failed`, …), or `recovery_required`. */
  readonly status?: AdminStatus;
  /** Only this agent's (conversation's). */
  readonly agentId?: string;
  /** Executions whose id starts with this. */
  readonly idPrefix?: string;
  /** Created at or after this time (ms since the epoch). */
  readonly since?: number;
  /** Created before this time (ms since the epoch). */
  readonly until?: number;
  /** At most this many rows, newest first (default 100, at most `adminScanMax`). */
  readonly limit?: number;
}

/** What `env.admin.counts()` answers. */
export interface AdminCounts {
  /** Executions per durable status and per outcome among the rows scanned. */
  readonly byStatus: Readonly<Record<string, number>>;
  /** Rows counted: every execution and queued message of the store (or
   * of the agent), or, on a store that cannot count, the newest `adminScanMax`. */
  readonly scanned: number;
  /** True when the store may hold more rows than were counted. */
  readonly truncated: boolean;
}

/** An unfinished execution nothing is running: this environment's recovery
 * left it (`recovery_required`), its phase is one only recovery resolves, or
 * the store has no live owner to run it. */
export interface HeldExecution {
  /** The execution's row. */
  readonly row: ExecutionRow;
  /** Why nothing runs it. */
  readonly reason: string;
}

/** A person's decision on a pending wait (`env.admin.decide`): an approval
 * decided (`approved`; with `input`, approved with edited arguments; with
 * `respond`, answered in place of the tool), or a typed wait given its
 * `value` (docs/decisions/0075). */
export interface AdminDecision {
  /** The pending approval's id (a typed wait's `waitId`). */
  readonly approvalId: string;
  /** Run the tool batch (true) or decline it (false). Not with `value`. */
  readonly approved?: boolean;
  /** Told to the model when declined; recorded either way. */
  readonly reason?: string;
  /** The `argumentsHash` of the request the person saw. */
  readonly argumentsHash?: string;
  /** With `approved: true`: edited arguments for the call `callId` names. */
  readonly input?: unknown;
  /** In place of running the call: its result. */
  readonly respond?: unknown;
  /** The call `input` or `respond` is for, when the wait covers several. */
  readonly callId?: string;
  /** A typed wait's value (checked against its `responseSchema`). */
  readonly value?: unknown;
  /** `true`: the clock answers the wait now — a timer fires, a wait with a
   * timeout ends timed out (docs/decisions/0076). */
  readonly fire?: true;
  /** Who decided (at most 256 characters), recorded and shown. */
  readonly decidedBy?: string;
}

/** A definition this environment has, to start conversations of from a
 * page (`env.admin.definitions()`). */
export interface AdminDefinition {
  /** The definition's name (`env.agent({ name })`) or agent id (`env.agent({ id })`). */
  readonly name: string;
  /** `conversations`: defined by name, one conversation per id; `agent`: defined by id, one conversation. */
  readonly kind: "conversations" | "agent";
}

/** What `env.admin.start()` takes. */
export interface AdminStartOptions {
  /** The conversation to send the message to (a named definition); a new
   * one when left out. Ignored for an agent defined by id. */
  readonly conversationId?: string;
}

/** Who owns a SQLite store (its `-owner.json`); undefined when nobody does
 * or the store is PostgreSQL. */
export interface StoreOwnerInfo {
  /** The owning process's id. */
  readonly pid: number;
  /** The machine it runs on. */
  readonly hostname: string;
  /** When it took the store (ISO 8601). */
  readonly startedAt: string;
}

const statusNames = new Set<string>(["preparing", "active", "suspended", "terminal", "queued"]);
const outcomeNames = new Set<string>(["completed", "failed", "suspended", "handed_off", "coordination_wait"]);
const recoveryPhases = new Set<string>(["preparing", "recovery_provider_completed", "recovery_tools", "recovery_tools_completed", "recovery_resolved_failed"]);

/** The surface the CLI and the dashboard share (`env.admin`,
 * docs/decisions/0038): listings, counts, timelines, held executions, the
 * store's owner, and the actions a person takes — decide, cancel, retry,
 * recover. */
export class Admin {
  /** @internal Made by the environment: `env.admin`. */
  constructor(private readonly environment: AdminHost) {}

  /** Executions (and queued messages) newest first, filtered. */
  async executions(query: AdminExecutionQuery = {}): Promise<ExecutionRow[]> {
    const limit = checkQuery(query);
    const filter: { status?: ExecutionStatusName | "recovery_required"; outcome?: OutcomeName; agentId?: string; limit: number } = {
      limit: query.idPrefix !== undefined || query.since !== undefined || query.until !== undefined ? adminScanMax : limit,
    };
    if (query.status !== undefined) {
      if (outcomeNames.has(query.status) && query.status !== "suspended") filter.outcome = query.status as OutcomeName;
      else filter.status = query.status as ExecutionStatusName | "recovery_required";
    }
    if (query.agentId !== undefined) filter.agentId = query.agentId;
    const rows = await this.environment.executions(filter as ExecutionListFilter);
    return rows
      .filter(
        (row) =>
          (query.idPrefix === undefined || row.executionId.startsWith(query.idPrefix))
          && (query.since === undefined || row.createdAt >= query.since)
          && (query.until === undefined || row.createdAt < query.until),
      )
      .slice(0, limit);
  }

  /** One page of executions, newest first, over the whole store: by
   * cursor (a page's `next` / `previous`), filtered by status, agent, id
   * prefix and time, searched by words of the input and output
   * (docs/decisions/0082). A bad cursor or filter is InvalidInputError with
   * `details.field` naming it. */
  page(query: AdminPageQuery = {}): Promise<AdminPage> {
    return adminPage(this.environment, query);
  }

  /** Cancels these executions (or the first `bulkExecutionsMax` matching a
   * query), each through `env.cancel`; answers for each once it ended, was
   * refused, or a second passed (then its cancel is on its way). */
  async cancelMany(selection: BulkSelection, options: CancelOptions = {}): Promise<BulkAnswer[]> {
    return cancelMany(this.environment, await bulkTargets(this.environment, selection, "env.admin.cancelMany()"), options);
  }

  /** Retries these failed executions (or the first `bulkExecutionsMax`
   * matching a query), each through `env.retry`; answers for each once it
   * was refused or a second passed (then it is retrying). */
  async retryMany(selection: BulkSelection): Promise<BulkAnswer[]> {
    return retryMany(this.environment, await bulkTargets(this.environment, selection, "env.admin.retryMany()"));
  }

  /** Counts per status and outcome (and `queued`) over the whole store, or
   * one agent's (an index-backed count, docs/decisions/0082); on a store
   * that cannot count, over its newest `adminScanMax` rows. */
  async counts(query: { readonly agentId?: string } = {}): Promise<AdminCounts> {
    if (capabilitiesOf(this.environment.store).pages) {
      const counts = await pagingStoreOf(this.environment.store).countExecutions(query);
      return { byStatus: counts.byStatus, scanned: counts.total + (counts.byStatus["queued"] ?? 0), truncated: false };
    }
    const rows = await this.environment.executions({ limit: adminScanMax, ...(query.agentId !== undefined ? { agentId: query.agentId } : {}) });
    const byStatus: Record<string, number> = {};
    for (const row of rows) {
      byStatus[row.status] = (byStatus[row.status] ?? 0) + 1;
      if (row.outcome !== null && row.outcome !== "suspended") byStatus[row.outcome] = (byStatus[row.outcome] ?? 0) + 1;
    }
    return { byStatus, scanned: rows.length, truncated: rows.length >= adminScanMax };
  }

  /** One execution (or queued message) by id. */
  execution(executionId: string): Promise<ExecutionRow | undefined> {
    return this.environment.execution(executionId);
  }

  /** The execution's durable timeline, each step with the attempt it belongs to. */
  timeline(executionId: string): Promise<(StoredStep & { readonly attempt: number })[]> {
    return this.environment.timeline(executionId);
  }

  /** Approvals waiting for a decision, oldest first, arguments in full. */
  approvals(): Promise<PendingApproval[]> {
    return this.environment.pendingApprovals();
  }

  /** Messages waiting behind their conversation's running execution. */
  queued(limit = 100): Promise<ExecutionRow[]> {
    return this.environment.executions({ status: "queued", limit: Math.min(limit, adminScanMax) });
  }

  /** Every execution not terminal (suspended included), oldest first. */
  unfinished(): Promise<ExecutionRow[]> {
    return this.environment.store.unfinishedExecutions();
  }

  /** Unfinished executions nothing runs now (see `HeldExecution`). */
  async held(): Promise<HeldExecution[]> {
    const heldHere = new Set((await this.environment.executions({ status: "recovery_required" })).map((row) => row.executionId));
    const ownerless = this.storeKind === "sqlite" && this.environment.visitor && this.owner() === undefined;
    const rows = await this.environment.store.unfinishedExecutions();
    const held: HeldExecution[] = [];
    for (const row of rows) {
      if (row.status === "suspended") continue;
      if (heldHere.has(row.executionId)) held.push({ row, reason: "recovery could not continue it in this process (recovery_required)" });
      else if (recoveryPhases.has(row.phase)) held.push({ row, reason: `phase ${row.phase}: only recovery resolves it` });
      else if (ownerless) held.push({ row, reason: "no process owns the store: the next owner's recovery continues it" });
    }
    return held;
  }

  /** The live owner of a SQLite store, if any: its `-owner.json`, unless
   * that names a process on this host that is gone (a killed owner leaves
   * the file behind). */
  owner(): StoreOwnerInfo | undefined {
    if (this.storeKind !== "sqlite") return undefined;
    const owner = readOwner(this.environment.store.path);
    if (owner === undefined || owner.hostname !== hostName()) return owner;
    return processAlive(owner.pid) ? owner : undefined;
  }

  /** `sqlite` (owned here or visited) or `postgres`. */
  get storeKind(): "sqlite" | "postgres" {
    return leasingStoreOf(this.environment.store) !== undefined ? "postgres" : "sqlite";
  }

  /** On PostgreSQL: the agent's lease is not held by this process (another
   * process runs and recovers its executions). */
  ownedElsewhere(agentId: string): boolean {
    const leasing = leasingStoreOf(this.environment.store);
    return leasing !== undefined && leasing.leaseOf(agentId) === undefined;
  }

  /** Decides the execution's pending approval, after checking it is the
   * one the person saw. Where it goes is the core's verdict (`byIdVerdict`,
   * source `Resume`): an agent defined here resumes it (`agent.resume`);
   * otherwise — a visitor, or PostgreSQL where another process holds the
   * agent — the decision is filed in the approval inbox for the owner.
   * Resolves with the Run once the decision is on its way (refused before
   * anything is decided: rejects); the Run settles with the final outcome. */
  async decide(executionId: string, decision: AdminDecision): Promise<Run> {
    const pending = (await this.environment.pendingApprovals()).find((approval) => approval.executionId === executionId);
    if (pending === undefined)
      throw new ApprovalMismatchError(`execution ${executionId} is not waiting for an approval decision (it may have been decided already)`, {
        executionId,
        details: { mismatch: "not_suspended" },
      });
    if (pending.request.approvalId !== decision.approvalId) {
      throw new ApprovalMismatchError(
        `execution ${executionId} waits on approval ${pending.request.approvalId}, not ${decision.approvalId}: look at it again before deciding`,
        { executionId, details: { mismatch: "approval_id" } },
      );
    }
    if (decision.argumentsHash !== undefined && pending.request.argumentsHash !== decision.argumentsHash) {
      throw new ApprovalMismatchError(
        `the tool arguments of execution ${executionId} are not the ones shown (arguments hash ${pending.request.argumentsHash}, decided on ${decision.argumentsHash}): look at them again before deciding`,
        { executionId, details: { mismatch: "arguments_hash" } },
      );
    }
    const resumeDecision = resumeDecisionOf(decision);
    const checked = validateResumeDecision(executionId, resumeDecision, "env.admin.decide()");
    const defined = this.environment.agentHandle(pending.agentId);
    const { verdict, inbox } = await this.environment.placeById(AdmissionSource.Resume, pending.agentId, defined !== undefined);
    if (verdict === AdmissionVerdict.RunHere && defined !== undefined) return defined.resume(executionId, resumeDecision);
    // Run by another process (this is a visitor, or another process holds
    // the agent's lease): filed in the approval inbox for its owner.
    if (verdict !== AdmissionVerdict.FileForOwner || inbox === undefined) {
      throw new InvalidInputError(
        `agent "${pending.agentId}" is not defined in this environment, which owns the store: define it (env.agent) before deciding its approvals, since the decision runs the execution on here`,
        { agentId: pending.agentId, executionId },
      );
    }
    this.environment.assertOpen(`a decision on execution ${executionId}`);
    const waiter = new Waiter(pending.agentId, undefined);
    inbox.file(pending.agentId, executionId, checked, waiter);
    return waiter;
  }

  /** The definitions this environment has (`env.agent`), by name or id:
   * what a page may start conversations of. */
  definitions(): AdminDefinition[] {
    return [...this.environment.definedHandles()].map(([name, handle]) => ({ name, kind: handle.kind })).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Sends `message` to a conversation of the definition named (a new
   * conversation unless `conversationId` names one), as `agent.start`
   * does — run here, queued behind the conversation's running execution,
   * or filed for the process that holds it, as the runtime places it. */
  start(definition: string, message: string, options: AdminStartOptions = {}): Run {
    if (typeof definition !== "string" || definition === "") throw new InvalidInputError("env.admin.start(definition, message): the definition must be a name");
    if (typeof message !== "string" || message.trim() === "")
      throw new InvalidInputError("env.admin.start(definition, message): the message must be a non-empty string");
    if (typeof options !== "object" || options === null)
      throw new InvalidInputError("env.admin.start(definition, message, options): options must be an object");
    const handle = this.environment.definedHandles().get(definition);
    if (handle === undefined) {
      const known = [...this.environment.definedHandles().keys()];
      throw new InvalidInputError(
        `env.admin.start(): no definition "${definition}" in this environment (${known.length === 0 ? "it defines none: start from the process that defines the agents" : `it has ${known.map((name) => `"${name}"`).join(", ")}`})`,
        { details: { definition } },
      );
    }
    const conversationId = options.conversationId === undefined || options.conversationId === "" ? undefined : options.conversationId;
    return handle.conversation(conversationId).start(message);
  }

  /** `env.cancel`. */
  cancel(executionId: string, options: CancelOptions = {}): Promise<CancelResult> {
    return this.environment.cancel(executionId, options);
  }

  /** `env.retry`. */
  retry(executionId: string, options: RetryOptions = {}): Run {
    return this.environment.retry(executionId, options);
  }

  /** Recovers every unfinished execution of the agents defined here. */
  async recover(): Promise<RecoveredExecution[]> {
    this.environment.assertOwner("env.admin.recover()");
    return this.environment.recover();
  }
}

/** The admin decision as `agent.resume` takes it. */
function resumeDecisionOf(decision: AdminDecision): ResumeDecision {
  if (typeof decision !== "object" || decision === null) throw new InvalidInputError("env.admin.decide(executionId, decision): the decision must be an object");
  const { approvalId, value } = decision;
  const common = {
    ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
    ...(decision.decidedBy !== undefined ? { decidedBy: decision.decidedBy } : {}),
  };
  if (value !== undefined) return { waitId: approvalId, value, ...common };
  if (decision.fire !== undefined) return { waitId: approvalId, fire: decision.fire, ...common };
  return {
    approvalId,
    ...(decision.approved !== undefined ? { approved: decision.approved } : {}),
    ...(decision.input !== undefined ? { input: decision.input } : {}),
    ...(decision.respond !== undefined ? { respond: decision.respond } : {}),
    ...(decision.callId !== undefined ? { callId: decision.callId } : {}),
    ...common,
  };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === "EPERM"; // alive, another user's
  }
}

function checkQuery(query: AdminExecutionQuery): number {
  if (typeof query !== "object" || query === null) throw new InvalidInputError("env.admin.executions(query): the query must be an object");
  if (query.status !== undefined && !statusNames.has(query.status) && !outcomeNames.has(query.status) && query.status !== "recovery_required") {
    throw new InvalidInputError(
      `env.admin.executions(query): unknown status ${JSON.stringify(query.status)}; expected one of ${[...statusNames, ...outcomeNames, "recovery_required"].join(", ")}`,
    );
  }
  for (const key of ["since", "until"] as const) {
    const value = query[key];
    if (value !== undefined && !Number.isFinite(value))
      throw new InvalidInputError(`env.admin.executions(query): "${key}" must be a time in ms since the epoch`);
  }
  const limit = query.limit ?? 100;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > adminScanMax)
    throw new InvalidInputError(`env.admin.executions(query): "limit" must be an integer from 1 to ${adminScanMax}`);
  return limit;
}
