// The JavaScript side of the native writer prototype (native/writer.c,
// docs/decisions/0044): loads `native/build/writer.node`, compiles each store
// operation into a program of prepared statements, and offloads groups of
// them to the writer thread with the dispatch rules of host/store/offload.ts
// (a group per turn of the event loop, eager at `eagerGroupOperations`, at
// most `groupsInFlightMax` groups in flight, `groupOperationsMax` each), so
// the bench compares the crossing and the executor, not the dispatch.
//
// A measured prototype, not part of the package: it covers the operations of
// an agent run (prepare with or without its first barrier, provider and tool
// barriers, terminal commit) and refuses the rest. The programs run the same
// statements as host/store/sqlite/operations.ts, one for one (the read before
// each compare-and-set included), except that the metadata a barrier or a
// terminal commit leaves is computed by SQLite (`json_patch`) instead of in
// JavaScript between the read and the write, since no JavaScript runs on the
// writer thread. (A merge patch drops nulls inside nested objects; the run's
// metadata has none, but a shipped version would build it with json_set.)

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AgentClosedError, ExecutionRehydrationRequiredError, InvalidInputError, StoreError, type PhronomyError } from "../../host/errors.js";
import { eagerGroupOperations, groupOperationsMax, groupsInFlightMax } from "../../host/store/offload.js";
import type { OffloadOperation } from "../../host/store/offload-operation.js";
import type { PrepareExecutionOperation, StepRecord, TerminalCommitOperation } from "../../host/store/records.js";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";
import { pageCacheKib } from "../../host/store/sqlite/schema.js";
import type { OffloadPolicy } from "../../host/store/offload.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { StoreOperation } from "../../host/store/records.js";
import type { OperationRunner } from "./floor.js";

/** How a group crosses to the writer thread. */
export type NativeEncoding = "json" | "binary";

interface Addon {
  open(
    path: string,
    synchronous: SynchronousMode,
    cacheKib: number,
    sql: readonly string[],
    onSettled: (group: number, results: Int32Array, messages: (string | undefined)[] | undefined) => void,
  ): object;
  submit(handle: object, group: number, count: number, payload: Buffer | string): void;
  ref(handle: object, keep: boolean): void;
  statistics(handle: object): [transactions: number, operations: number, busySeconds: number];
  close(handle: object): void;
}

/** Where `sh native/build.sh` leaves the addon, found from this file under
 * tsx (bench/store/) or compiled (build/bench-dist/bench/store/). */
export function nativeWriterPath(): string | undefined {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level < 6; level += 1) {
    const candidate = join(directory, "native", "build", "writer.node");
    if (existsSync(candidate)) return candidate;
    directory = dirname(directory);
  }
  return undefined;
}

let addon: Addon | undefined;
function loadAddon(): Addon {
  if (addon !== undefined) return addon;
  const path = nativeWriterPath();
  if (path === undefined) throw new Error("native/build/writer.node is not built: run `sh native/build.sh`");
  addon = createRequire(import.meta.url)(path) as Addon;
  return addon;
}

// -- statements ------------------------------------------------------------------

/** The writer's statements, by index; the same text as operations.ts where
 * the statement is the same. */
const enum Sql {
  ensureAgent,
  agentClosed,
  executionExists,
  agentRevision,
  step,
  insertExecution,
  journal,
  selectForUpdate,
  barrierUpdate,
  terminalUpdate,
  journalOfExecution,
}

const statements: readonly string[] = [
  "INSERT INTO agents (agent_id, lifecycle, revision, created_at, updated_at) VALUES (?, 'open', 1, ?, ?) ON CONFLICT (agent_id) DO NOTHING",
  "SELECT 1 FROM agents WHERE agent_id = ? AND lifecycle = 'closed'",
  "SELECT 1 AS found FROM executions WHERE execution_id = ?",
  "UPDATE agents SET revision = revision + 1, updated_at = ? WHERE agent_id = ?",
  `INSERT INTO steps (execution_rowid, seq, kind, at, payload)
   SELECT rowid, (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE execution_rowid = executions.rowid), ?, ?, ? FROM executions WHERE execution_id = ?`,
  `INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output,
                           error, usage, approval_request, created_at, updated_at)
   VALUES (?, ?, ?, 'active', 'calling_llm', ?, ?, ?, NULL, 'null', 'null', ?, 'null', ?, ?)`,
  "INSERT INTO journal (agent_id, seq, execution_id, role, content, at) VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM journal WHERE agent_id = ?), ?, ?, ?, ?)",
  "SELECT agent_id, revision, status, metadata, approval_request FROM executions WHERE execution_id = ? AND revision = ?",
  `UPDATE executions SET revision = ?, phase = ?, metadata = json_patch(metadata, ?), usage = ?, updated_at = ?
   WHERE execution_id = ? AND revision = ? AND status = 'active'`,
  `UPDATE executions SET revision = ?, status = ?, phase = ?, outcome = ?, output = ?, error = ?, usage = ?,
                         approval_request = ?, metadata = json_patch(metadata, ?), updated_at = ?
   WHERE execution_id = ? AND revision = ? AND status IN ('preparing', 'active', 'suspended')`,
  `INSERT INTO journal (agent_id, seq, execution_id, role, content, at)
   SELECT agent_id, (SELECT coalesce(max(seq), 0) + 1 FROM journal WHERE journal.agent_id = executions.agent_id), ?, ?, ?, ?
   FROM executions WHERE execution_id = ?`,
];

const enum Check {
  none = 0,
  oneChange = 1,
  noRow = 2,
  row = 3,
}

type Value = string | number | null;
/** [statement, check, ...parameters] */
type Step = Value[];
type Program = Step[];

const json = (value: unknown): string => JSON.stringify(value ?? null);
const zeroUsage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

/** A compiled operation: its program, and how its result code (-1 ok, the
 * index of the failed check) becomes the operation's value or error. */
interface Compiled {
  readonly program: Program;
  readonly settle: (failedStep: number) => { ok: true; value: unknown } | { ok: false; error: PhronomyError };
}

function stepInserts(executionId: string, steps: readonly StepRecord[]): Step[] {
  return steps.map((step) => [Sql.step, Check.none, step.kind, step.at, json(step.payload), executionId]);
}

function movedOn(operation: { type: string; executionId: string; expectedRevision: number }): PhronomyError {
  return new ExecutionRehydrationRequiredError(
    `execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} and updated no row`,
    { executionId: operation.executionId },
  );
}

function compilePrepare(operation: PrepareExecutionOperation): Compiled {
  if (operation.blockedBy !== undefined) throw new InvalidInputError("the native writer prototype does not write blocked preparations");
  const { executionId, agentId, at } = operation;
  const barrier = operation.firstBarrier;
  const revision = barrier === undefined ? 1 : 2;
  const metadata =
    barrier === undefined ? { config: operation.config } : { config: operation.config, pendingModelCall: { callId: barrier.callId, startedAt: at }, turns: 0 };
  const program: Program = [
    [Sql.ensureAgent, Check.none, agentId, at, at],
    [Sql.agentClosed, Check.noRow, agentId],
    [Sql.executionExists, Check.noRow, executionId],
    [Sql.agentRevision, Check.none, at, agentId],
    [Sql.insertExecution, Check.none, executionId, agentId, revision, operation.mode, json(operation.input), json(metadata), json(zeroUsage), at, at],
    ...stepInserts(executionId, [{ kind: "input", at, payload: operation.input }]),
    ...(barrier === undefined ? [] : stepInserts(executionId, [{ kind: "provider_barrier", at, payload: { callId: barrier.callId, revision } }])),
    ...operation.journal.map((record): Step => [Sql.journal, Check.none, agentId, agentId, record.executionId, record.role, json(record.content), record.at]),
  ];
  return {
    program,
    settle: (failed) => {
      if (failed === 1) return { ok: true, value: { outcome: "not_established", error: new AgentClosedError(agentId).toRecord() } };
      if (failed === 2)
        return {
          ok: true,
          value: {
            outcome: "not_established",
            error: new InvalidInputError(`execution id ${executionId} is already in the store; every start needs a new execution id`, {
              agentId,
              executionId,
            }).toRecord(),
          },
        };
      return { ok: true, value: barrier === undefined ? { outcome: "active", revision: 1 } : { outcome: "active", revision: 1, firstBarrierRevision: 2 } };
    },
  };
}

function compileBarrier(operation: Extract<OffloadOperation, { type: "providerBarrier" | "toolBarrier" }>): Compiled {
  const revision = operation.expectedRevision + 1;
  const running = operation.runningSince === undefined ? {} : { runningSince: operation.runningSince };
  const provider = operation.type === "providerBarrier";
  const patch = provider
    ? { toolBatch: null, pendingModelCall: { callId: operation.callId, startedAt: operation.at }, turns: operation.turns, ...running }
    : { pendingModelCall: null, toolBatch: operation.toolBatch, turns: operation.turns, ...running };
  const barrierStep: StepRecord = provider
    ? { kind: "provider_barrier", at: operation.at, payload: { callId: operation.callId, revision } }
    : { kind: "tool_barrier", at: operation.at, payload: { calls: JSON.parse(JSON.stringify(operation.toolBatch)), revision } };
  const program: Program = [
    [Sql.selectForUpdate, Check.row, operation.executionId, operation.expectedRevision],
    [
      Sql.barrierUpdate,
      Check.oneChange,
      revision,
      provider ? "calling_llm" : "dispatching_tools",
      json(patch),
      json(operation.usage),
      operation.at,
      operation.executionId,
      operation.expectedRevision,
    ],
    ...stepInserts(operation.executionId, [...operation.steps, barrierStep]),
  ];
  return { program, settle: (failed) => (failed < 0 ? { ok: true, value: { revision } } : { ok: false, error: movedOn(operation) }) };
}

function compileTerminal(operation: TerminalCommitOperation): Compiled {
  const revision = operation.expectedRevision + 1;
  const suspended = operation.outcome === "suspended";
  const patch: Record<string, unknown> = {};
  if (suspended) Object.assign(patch, { approval: null, runningSince: null });
  if (operation.toolBatch !== undefined) Object.assign(patch, { pendingModelCall: null, toolBatch: operation.toolBatch });
  if (operation.handoff !== null) patch["handoff"] = operation.handoff;
  const finalStep: StepRecord = suspended
    ? { kind: "approval_requested", at: operation.at, payload: { revision, approvalRequest: operation.approvalRequest } }
    : { kind: "terminal", at: operation.at, payload: { outcome: operation.outcome, revision } };
  const status = suspended ? "suspended" : "terminal";
  const program: Program = [
    [Sql.selectForUpdate, Check.row, operation.executionId, operation.expectedRevision],
    [
      Sql.terminalUpdate,
      Check.oneChange,
      revision,
      status,
      status,
      operation.outcome,
      json(operation.output),
      json(operation.error),
      json(operation.usage),
      json(operation.approvalRequest),
      json(patch),
      operation.at,
      operation.executionId,
      operation.expectedRevision,
    ],
    ...stepInserts(operation.executionId, [...operation.steps, finalStep]),
    ...operation.journal.map(
      (record): Step => [Sql.journalOfExecution, Check.none, record.executionId, record.role, json(record.content), record.at, operation.executionId],
    ),
  ];
  return { program, settle: (failed) => (failed < 0 ? { ok: true, value: { revision } } : { ok: false, error: movedOn(operation) }) };
}

export function compileOperation(operation: OffloadOperation): Compiled {
  switch (operation.type) {
    case "prepareExecution":
      return compilePrepare(operation);
    case "providerBarrier":
    case "toolBarrier":
      return compileBarrier(operation);
    case "terminalCommit":
      return compileTerminal(operation);
    default:
      throw new InvalidInputError(`the native writer prototype does not run ${operation.type}`);
  }
}

// -- encodings -------------------------------------------------------------------

/** Most bytes the binary scratch buffer keeps between groups (it grows for
 * a bigger group and is replaced by a smaller one after). */
const scratchBytesKept = 1 << 20;
let scratch = Buffer.allocUnsafe(64 * 1024);

/** The binary layout native/writer.c reads (its header comment). */
export function encodeBinary(programs: readonly Program[]): Buffer {
  let offset = 0;
  const ensure = (bytes: number): void => {
    if (offset + bytes <= scratch.length) return;
    const grown = Buffer.allocUnsafe(Math.max(scratch.length * 2, offset + bytes));
    scratch.copy(grown, 0, 0, offset);
    scratch = grown;
  };
  ensure(4);
  scratch.writeUInt32LE(programs.length, offset);
  offset += 4;
  for (const program of programs) {
    ensure(2);
    scratch.writeUInt16LE(program.length, offset);
    offset += 2;
    for (const step of program) {
      ensure(4);
      scratch.writeUInt16LE(step[0] as number, offset);
      scratch[offset + 2] = step[1] as number;
      scratch[offset + 3] = step.length - 2;
      offset += 4;
      for (let index = 2; index < step.length; index += 1) {
        const value = step[index]!;
        if (value === null) {
          ensure(1);
          scratch[offset++] = 0;
        } else if (typeof value === "number") {
          ensure(9);
          scratch[offset++] = 2;
          scratch.writeDoubleLE(value, offset);
          offset += 8;
        } else {
          ensure(5 + value.length * 3);
          scratch[offset] = 3;
          const written = scratch.write(value, offset + 5, "utf8");
          scratch.writeUInt32LE(written, offset + 1);
          offset += 5 + written;
        }
      }
    }
  }
  const encoded = scratch.subarray(0, offset); // copied by `submit` at once
  if (scratch.length > scratchBytesKept) scratch = Buffer.allocUnsafe(64 * 1024);
  return encoded;
}

// -- the writer ------------------------------------------------------------------

interface Entry {
  readonly compiled: Compiled;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: PhronomyError) => void;
}

export interface NativeWriterStatistics {
  readonly groups: number;
  readonly largestGroup: number;
  readonly transactions: number;
  readonly operations: number;
  /** Seconds the writer thread spent inside transactions. */
  readonly busySeconds: number;
}

export class NativeWriter {
  private readonly addon: Addon;
  private readonly handle: object;
  private readonly queue: Entry[] = [];
  private readonly inFlight = new Map<number, readonly Entry[]>();
  private groupsSent = 0;
  private largestGroup = 0;
  private flushScheduled = false;
  private closed = false;

  private constructor(
    readonly path: string,
    synchronous: SynchronousMode,
    readonly encoding: NativeEncoding,
  ) {
    this.addon = loadAddon();
    this.handle = this.addon.open(path, synchronous, pageCacheKib, statements, (group, results, messages) => this.settled(group, results, messages));
  }

  /** Opens a writer on a store file that exists (made by SqliteStore.open). */
  static open(path: string, synchronous: SynchronousMode, encoding: NativeEncoding = "binary"): NativeWriter {
    return new NativeWriter(path, synchronous, encoding);
  }

  get statistics(): NativeWriterStatistics {
    const [transactions, operations, busySeconds] = this.addon.statistics(this.handle);
    return { groups: this.groupsSent, largestGroup: this.largestGroup, transactions, operations, busySeconds };
  }

  run(operation: OffloadOperation): Promise<unknown> {
    if (this.closed) throw new StoreError(`the native writer for ${this.path} is closed`);
    const compiled = compileOperation(operation);
    const result = new Promise<unknown>((resolve, reject) => this.queue.push({ compiled, resolve, reject }));
    if (this.queue.length >= eagerGroupOperations) this.flush();
    else this.scheduleFlush();
    return result;
  }

  /** Waits for what is in flight, then stops the writer thread. */
  async close(): Promise<void> {
    while (this.queue.length > 0 || this.inFlight.size > 0) await new Promise((resolve) => setImmediate(resolve));
    if (this.closed) return;
    this.closed = true;
    this.addon.close(this.handle);
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.inFlight.size >= groupsInFlightMax) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight.size < groupsInFlightMax && this.queue.length > 0) {
      const entries = this.queue.splice(0, groupOperationsMax);
      this.largestGroup = Math.max(this.largestGroup, entries.length);
      const programs = entries.map((entry) => entry.compiled.program);
      const payload = this.encoding === "binary" ? encodeBinary(programs) : JSON.stringify(programs);
      this.groupsSent += 1;
      if (this.inFlight.size === 0) this.addon.ref(this.handle, true);
      this.inFlight.set(this.groupsSent, entries);
      this.addon.submit(this.handle, this.groupsSent, entries.length, payload);
    }
  }

  private settled(group: number, results: Int32Array, messages: (string | undefined)[] | undefined): void {
    const entries = this.inFlight.get(group);
    if (entries === undefined) throw new Error(`phronomy: the native writer answered group ${group}, which is not in flight`);
    this.inFlight.delete(group);
    if (this.inFlight.size === 0) this.addon.ref(this.handle, false);
    entries.forEach((entry, index) => {
      const code = results[index]!;
      if (code < -1) {
        entry.reject(new StoreError(`the store at ${this.path} failed: ${messages?.[index] ?? "unknown error"}`));
        return;
      }
      const settlement = entry.compiled.settle(code);
      if (settlement.ok) entry.resolve(settlement.value);
      else entry.reject(settlement.error);
    });
    this.flush();
  }
}

// -- the variants the benches compare -------------------------------------------

export type Variant = { readonly kind: "worker"; readonly policy: OffloadPolicy } | { readonly kind: "native"; readonly encoding: NativeEncoding };
export const variants: readonly Variant[] = [
  { kind: "worker", policy: "worker" },
  { kind: "worker", policy: "adaptive" },
  { kind: "native", encoding: "binary" },
  { kind: "native", encoding: "json" },
];
export function variantName(variant: Variant): string {
  if (variant.kind === "native") return `native (${variant.encoding})`;
  return variant.policy === "inline" ? "no thread (inline)" : `js worker (${variant.policy})`;
}

/** A store file with the bench agent, and the variant's writer on it.
 *
 * The native variant never leaves a better-sqlite3 connection open on the
 * file the writer writes: the addon links its own copy of SQLite, and two
 * copies of SQLite in one process do not see each other's POSIX locks (a
 * process's fcntl locks never conflict with each other), so the writer's
 * close took the other copy's connection for the last one, checkpointed and
 * deleted the WAL under it (docs/decisions/0044). The store is opened to
 * create the file and its agent, closed, and a store on a file of its own
 * stays open beside the writer, so the process holds what it holds in the
 * worker variant (a store and its connection). */
export async function openVariant(
  path: string,
  variant: Variant,
  synchronous: SynchronousMode,
): Promise<{ runner: OperationRunner; close: () => Promise<void>; busySeconds: () => number | undefined }> {
  const store = await SqliteStore.open(path, { synchronous, offloadPolicy: variant.kind === "worker" ? variant.policy : "inline" });
  await store.ensureAgent("bench", 0);
  if (variant.kind === "worker") return { runner: store, close: () => store.close(), busySeconds: () => undefined };
  await store.close();
  const beside = await SqliteStore.open(`${path}-beside.db`, { synchronous, offloadPolicy: "inline" });
  const writer = NativeWriter.open(path, synchronous, variant.encoding);
  return {
    runner: { run: (operation: StoreOperation) => writer.run(operation) },
    close: async () => {
      await writer.close();
      await beside.close();
    },
    busySeconds: () => writer.statistics.busySeconds,
  };
}
