// Fuzzing the host's carrying out of effects: a real environment (the real
// core, control loop, coordinator and sessions, through `Phronomy.open`)
// against a simulated store (simulated-store.ts) and a fake clock. A seeded
// generator picks, step after step, what happens next: a start (with or
// without a timeout or an abort signal), a store operation settling
// (committed, failed before or after committing, lost to a
// compare-and-set) or refused at submission, a model answering (text, a
// tool call, a tool call that needs approval, an error), a tool finishing
// or throwing, an approval decided (or a wrong approval id), a cancel, the
// clock moving on (timeouts), another observer (`env.wait`), `env.recover()`
// `env.close()`, a cancel or a retry by id (decision 0026) and, now and then,
// a trap in the core (decision 0023). Then everything pending is drained.
//
// Invariants:
// * every waiter (start, resume, wait, retry) settles exactly once, with
//   exactly one terminal event, by the time `env.close()` resolved; so does
//   every `env.cancel`, with the outcome its row then holds, or an error
//   that says nothing was cancelled here;
// * each settled run agrees with the durable row at that moment:
//   completed ⇔ terminal/completed with its output; an execution-ending
//   error ⇔ terminal/failed with that code; "left for recovery" errors
//   (STORE, EXECUTION_REHYDRATION_REQUIRED, OFFLOAD_FULL) leave the row
//   unfinished or record that same failure (unless a store failure was
//   reported after its transaction committed);
// * after every step, no agent has two live executions in the host, nor
//   two unfinished rows in the store;
// * once everything drained, the core holds no admission but suspended
//   and recovery_required ones;
// * after a trap in the core, the host tracks nothing live;
// * a new environment on the same rows recovers every unfinished execution
//   to an end, or leaves it suspended.
//
// HOST_FUZZ_SEED=<seed> replays a run (HOST_FUZZ_RUNS=1 for that one only);
// HOST_FUZZ_RUNS=<n> runs more. A failure prints its seed and the last steps.

import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { AdmissionState } from "../../assembly/abi.js";
import { loadAiSdk, loadAiSdkInternals } from "../../host/agent/ai-sdk.js";
import { scriptedModel, type ScriptedTurn } from "../../host/agent/scripted-model.js";
import { ExecutionRehydrationRequiredError, OffloadFullError, StoreError } from "../../host/errors.js";
import { Phronomy, tool, type Agent, type Environment, type ExecutionEvent, type Run } from "../../host/index.js";
import type { CoreExports } from "../../host/core/core-exports.js";
import type { ExecutionRow, StoreOperation } from "../../host/store/records.js";
import { generator, seedFrom } from "../support/seeded.js";
import { SimulatedDatabase, SimulatedStore, type OperationFate } from "./simulated-store.js";

// Execution, call and approval ids come from randomUUID: a counter makes a
// run replay exactly (recovery reads rows in (created_at, execution_id)
// order, and the fake clock makes created_at ties common).
const ids = vi.hoisted(() => ({ next: 0 }));
vi.mock("node:crypto", async (importOriginal) => {
  const original = await importOriginal<typeof import("node:crypto")>();
  return {
    ...original,
    randomUUID: () => {
      ids.next += 1;
      return `00000000-0000-4000-8000-${ids.next.toString(16).padStart(12, "0")}`;
    },
  };
});

const RUNS = Number(process.env.HOST_FUZZ_RUNS ?? 300);
const BASE_SEED = seedFrom("HOST_FUZZ_SEED");
const STEPS_MIN = 20;
const STEPS_MAX = 140;
/** Model turns before the scripted model must answer with text. */
const TOOL_TURNS_MAX = 3;

// One terminal event per Run (decision 0018): a start that suspends ends its
// stream at approval_required; the resume's Run streams the rest.
const TERMINAL_EVENTS = new Set(["done", "error", "timeout", "cancelled", "handoff", "approval_required"]);
/** Codes that end an execution with a durable `failed` outcome. */
const ENDING_CODES = new Set([
  "TIMEOUT",
  "CANCELLED",
  "MODEL_FAILED",
  "TOOL_FAILED",
  "MAX_TURNS_EXCEEDED",
  "BUDGET_EXCEEDED",
  "INPUT_BLOCKED",
  "OUTPUT_BLOCKED",
]);
/** Codes that say the execution was left as the store has it, for
 * recovery: its row must not be terminal then. */
const LEFT_CODES = new Set(["EXECUTION_REHYDRATION_REQUIRED", "STORE", "OFFLOAD_FULL"]);
/** Codes that refuse a request (or end a wait on close) and say nothing of
 * the execution's durable state. */
const REFUSED_CODES = new Set([
  "RUNTIME_SHUTDOWN",
  "APPROVAL_MISMATCH",
  "AGENT_BUSY",
  "INVALID_INPUT",
  "CORE_FAILED",
  "RETRY_REFUSED",
  "EXECUTION_NOT_FOUND",
  "EXECUTION_ENDED",
]);

type Random = () => number;

interface Tracked {
  readonly label: string;
  readonly run: Run;
  readonly controller: AbortController | undefined;
  /** An `env.wait` observer: its stream has a terminal event only when it
   * attached to a live execution (a finished one's outcome is read from
   * its row, a refused wait is rejected as it is). */
  readonly observer: boolean;
  executionId: string | undefined;
  settlements: number;
  terminalEvents: string[];
  outcome: { ok: true; output: unknown; outcome: string } | { ok: false; code: string; message: string } | undefined;
}

interface PendingCall<T> {
  readonly label: string;
  readonly resolve: (value: T) => void;
  readonly reject: (error: Error) => void;
}

/** One fuzz run's world: the database, the store, the environment, the
 * pending model and tool calls, the tracked runs and a log of steps. */
class World {
  readonly database = new SimulatedDatabase();
  readonly store: SimulatedStore;
  environment!: Environment;
  agents: Agent[] = [];
  readonly models: PendingCall<ScriptedTurn>[] = [];
  readonly tools: PendingCall<unknown>[] = [];
  readonly tracked: Tracked[] = [];
  /** Each `env.cancel`: how many times it settled, and how. */
  readonly cancels: { readonly label: string; settlements: number }[] = [];
  readonly log: string[] = [];
  readonly problems: string[] = [];
  closing: Promise<void> | undefined;
  /** Set once the core was made to trap (decision 0023). */
  trapped = false;
  /** Set once the steps are over: nothing fails any more. */
  draining = false;
  private answers = 0;

  constructor(
    readonly seed: number,
    readonly random: Random,
  ) {
    this.store = new SimulatedStore(this.database, { refuse: (operation) => this.refusal(operation) });
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }

  chance(probability: number): boolean {
    return this.random() < probability;
  }

  note(line: string): void {
    if (process.env.HOST_FUZZ_TRACE === "steps") process.stderr.write(`${line}\n`);
    this.log.push(line);
  }

  problem(line: string): void {
    this.problems.push(`${line} (after step ${this.log.length}: ${this.log.at(-1) ?? "start"})`);
  }

  /** A submission refused at once, now and then. */
  private refusal(operation: StoreOperation): Error | undefined {
    if (this.draining || !this.chance(0.03)) return undefined;
    const error = this.pick([
      () => new OffloadFullError(0),
      () => new StoreError(`simulated: ${operation.type} refused at submission`),
      () => new ExecutionRehydrationRequiredError(`simulated: ${operation.type} refused at submission`, { executionId: operation.executionId }),
    ])();
    this.note(`  refused ${operation.type} of ${short(operation.executionId)} at submission: ${error.constructor.name}`);
    return error;
  }

  async open(): Promise<void> {
    this.environment = await Phronomy.open({ store: this.store, logger: { warn: () => undefined } });
    const count = 1 + Math.floor(this.random() * 4);
    this.agents = Array.from({ length: count }, (_, index) =>
      this.environment.agent({
        id: `agent-${index}`,
        instructions: "You help.",
        model: scriptedModel(
          ({ turn }) =>
            new Promise<ScriptedTurn>((resolve, reject) => {
              this.models.push({ label: `model turn ${turn} of agent-${index}`, resolve, reject });
            }),
        ),
        tools: { lookup: this.lookupTool(false), refund: this.lookupTool(true) },
      }),
    );
    await settle();
  }

  private lookupTool(needsApproval: boolean) {
    return tool({
      description: needsApproval ? "Refunds an order" : "Looks an order up",
      inputSchema: z.object({ orderId: z.string() }),
      needsApproval,
      execute: ({ orderId }, { idempotencyKey }) =>
        new Promise((resolve, reject) => {
          this.tools.push({ label: `${needsApproval ? "refund" : "lookup"} ${orderId} (${short(idempotencyKey)})`, resolve, reject });
        }),
    });
  }

  /** The next model turn, by the generator (or text, once deep enough). */
  modelTurn(label: string, draining: boolean): ScriptedTurn {
    const turn = Number(/model turn (\d+)/.exec(label)?.[1] ?? 0);
    this.answers += 1;
    const answer = { text: `answer ${this.answers}` };
    if (draining || turn >= TOOL_TURNS_MAX) return answer;
    const choice = this.random();
    if (choice < 0.4) return answer;
    if (choice < 0.75) return { toolCalls: [{ toolName: "lookup", input: { orderId: `${this.answers}` } }] };
    if (choice < 0.9) return { toolCalls: [{ toolName: "refund", input: { orderId: `${this.answers}` } }] };
    return { error: `simulated provider failure ${this.answers}` };
  }

  track(label: string, run: Run, controller: AbortController | undefined, events: string[], observer = false): Tracked {
    const tracked: Tracked = { label, run, controller, observer, executionId: undefined, settlements: 0, terminalEvents: events, outcome: undefined };
    this.tracked.push(tracked);
    run.executionId.then(
      (id) => {
        tracked.executionId = id;
      },
      () => undefined,
    );
    run.result.then(
      (result) => {
        tracked.settlements += 1;
        tracked.executionId ??= result.executionId;
        tracked.outcome = { ok: true, output: result.output, outcome: result.outcome };
        this.checkSettlement(tracked);
      },
      (error: { code?: string; message?: string; executionId?: string }) => {
        tracked.settlements += 1;
        tracked.executionId ??= error.executionId;
        tracked.outcome = { ok: false, code: String(error.code), message: String(error.message) };
        this.checkSettlement(tracked);
      },
    );
    return tracked;
  }

  /** The run's outcome against the durable row, as it is when it settled. */
  private checkSettlement(tracked: Tracked): void {
    const outcome = tracked.outcome!;
    const id = tracked.executionId;
    const row = id === undefined ? undefined : this.database.execution(id);
    const where = `${tracked.label} (${short(id)}) settled ${JSON.stringify(outcome)} with row ${describeRow(row)}`;
    if (outcome.ok) {
      if (row?.status !== "terminal" || row.outcome !== outcome.outcome || JSON.stringify(row.output) !== JSON.stringify(outcome.output))
        this.problem(`${where}: resolved, but the row does not say so`);
      return;
    }
    if (ENDING_CODES.has(outcome.code)) {
      if (id === undefined) return; // refused before admission (an aborted signal)
      if (row?.status !== "terminal" || row.outcome !== "failed" || row.error?.code !== outcome.code)
        this.problem(`${where}: failed with an ending code, but the row does not say so`);
      return;
    }
    if (REFUSED_CODES.has(outcome.code)) return;
    if (outcome.code === "APPROVAL_REQUIRED") {
      // An observer of a suspension (decision 0018): the row says suspended.
      if (!tracked.observer || row?.status !== "suspended")
        this.problem(`${where}: APPROVAL_REQUIRED, but ${tracked.observer ? "the row is not suspended" : "only observers are told so"}`);
      return;
    }
    if (!LEFT_CODES.has(outcome.code)) {
      this.problem(`${where}: unexpected error code`);
      return;
    }
    // Left for recovery, or ended with that failure recorded (a barrier
    // refused ends the run `failed` with the store's error).
    const recorded = row?.outcome === "failed" && row.error?.code === outcome.code;
    if (id !== undefined && row?.status === "terminal" && !recorded && !this.database.ambiguous.has(id)) {
      this.problem(`${where}: told the execution was left unfinished, but its row is terminal with another outcome`);
    }
  }

  /** An `env.cancel`: resolved with the outcome its row holds then, or
   * rejected with a refusal or a "left as the store has it" error. */
  trackCancel(label: string, executionId: string, cancelled: Promise<{ readonly outcome: string }>): void {
    const tracked = { label, settlements: 0 };
    this.cancels.push(tracked);
    cancelled.then(
      (result) => {
        tracked.settlements += 1;
        const row = this.database.execution(executionId);
        const outcome = row?.outcome === "failed" && row.error?.code === "CANCELLED" ? "cancelled" : row?.outcome;
        if (row?.status !== "terminal" || outcome !== result.outcome) this.problem(`${label} resolved ${result.outcome}, but the row is ${describeRow(row)}`);
      },
      (error: { code?: string }) => {
        tracked.settlements += 1;
        const code = String(error.code);
        if (!REFUSED_CODES.has(code) && !LEFT_CODES.has(code) && !ENDING_CODES.has(code)) this.problem(`${label} rejected with unexpected code ${code}`);
      },
    );
  }

  /** No agent has two live executions in the host, nor two unfinished rows. */
  checkAdmissions(): void {
    const live = new Map<string, string[]>();
    const entries = (this.environment.coordinator as unknown as { executionIds: Map<string, { agent: { id: string } }> }).executionIds;
    for (const [id, entry] of entries) live.set(entry.agent.id, [...(live.get(entry.agent.id) ?? []), id]);
    for (const [agentId, list] of live)
      if (list.length > 1) this.problem(`agent ${agentId} has ${list.length} live executions in the host: ${list.map(short).join(", ")}`);
    const rows = new Map<string, string[]>();
    for (const row of this.database.unfinished())
      rows.set(row.agentId, [...(rows.get(row.agentId) ?? []), `${short(row.executionId)} ${row.status}/${row.phase}`]);
    for (const [agentId, list] of rows)
      if (list.length > 1) this.problem(`agent ${agentId} has ${list.length} unfinished executions in the store: ${list.join(", ")}`);
  }
}

function short(id: string | undefined): string {
  return id === undefined ? "?" : id.replace(/^00000000-0000-4000-8000-0*/, "#");
}

function describeRow(row: ExecutionRow | undefined): string {
  return row === undefined ? "(none)" : `${row.status}/${row.phase}/${row.outcome ?? "-"}${row.error ? `/${row.error.code}` : ""}`;
}

/** Lets every microtask and the loop's drains run (timers are fake; the
 * simulated store holds operations until settled). */
async function settle(): Promise<void> {
  for (let round = 0; round < 3; round += 1) await new Promise<void>((resolve) => setImmediate(resolve));
}

// -- the steps ---------------------------------------------------------------------------------

function startRun(world: World): void {
  const agent = world.pick(world.agents);
  const controller = world.chance(0.3) ? new AbortController() : undefined;
  const timeoutMs = world.chance(0.3) ? 20 + Math.floor(world.random() * 400) : undefined;
  const events: string[] = [];
  const label = `start ${world.tracked.length} on ${agent.id}${timeoutMs ? ` timeout ${timeoutMs}` : ""}${controller ? " with signal" : ""}`;
  world.note(label);
  const run = agent.start(`question ${world.tracked.length}`, {
    ...(controller ? { signal: controller.signal } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    onEvent: terminalCounter(events),
  });
  world.track(label, run, controller, events);
}

function terminalCounter(events: string[]): (event: ExecutionEvent) => void {
  return (event) => {
    if (TERMINAL_EVENTS.has(event.type)) events.push(event.type);
  };
}

/** Every fate is generated for every operation kind. Two used to wedge an
 * agent for good (docs/decisions/0020), replayed by these seeds: a
 * preparation whose transaction failed with nothing written
 * (HOST_FUZZ_SEED=4263738228 HOST_FUZZ_RUNS=1) and a terminal commit that
 * committed and then reported a store failure (HOST_FUZZ_SEED=1926792784). */
const FATES: readonly OperationFate[] = [
  "commit",
  "commit",
  "commit",
  "commit",
  "commit",
  "commit",
  "commit",
  "commit",
  "commit",
  "commit",
  "commit",
  "commit",
  "store_failed",
  "committed_then_failed",
  "lost_race",
];

function fateOf(world: World, operation: StoreOperation, draining: boolean): OperationFate {
  if (draining) return "commit";
  return world.pick(FATES);
}

function settleOperation(world: World, draining: boolean): boolean {
  if (world.store.pending.length === 0) return false;
  const operation = world.pick(world.store.pending);
  const fate = fateOf(world, operation.operation, draining);
  world.note(`${fate} ${operation.operation.type} #${operation.number} of ${short(operation.operation.executionId)}`);
  operation.settle(fate);
  return true;
}

function answerModel(world: World, draining: boolean): boolean {
  if (world.models.length === 0) return false;
  const call = world.pick(world.models);
  world.models.splice(world.models.indexOf(call), 1);
  const turn = world.modelTurn(call.label, draining);
  world.note(`${call.label}: ${JSON.stringify(turn)}`);
  call.resolve(turn);
  return true;
}

function finishTool(world: World, draining: boolean): boolean {
  if (world.tools.length === 0) return false;
  const call = world.pick(world.tools);
  world.tools.splice(world.tools.indexOf(call), 1);
  const fails = !draining && world.chance(0.15);
  world.note(`${call.label}: ${fails ? "throws" : "returns"}`);
  if (fails) call.reject(new Error("simulated tool failure"));
  else call.resolve({ status: "shipped" });
  return true;
}

function decideApproval(world: World): void {
  const suspended = world.database.unfinished().filter((row) => row.status === "suspended" && row.approvalRequest !== null);
  if (suspended.length === 0) return;
  const row = world.pick(suspended);
  const agent = world.agents.find((candidate) => candidate.id === row.agentId);
  if (!agent) return;
  const request = row.approvalRequest as { approvalId: string };
  const approved = world.chance(0.6);
  const approvalId = world.chance(0.1) ? "not-the-approval" : request.approvalId;
  const events: string[] = [];
  const label = `resume ${short(row.executionId)} ${approved ? "approved" : "declined"}${approvalId === request.approvalId ? "" : " with a wrong approval id"}`;
  world.note(label);
  world.track(
    label,
    agent.resume(row.executionId, { approvalId, approved, reason: approved ? undefined : "no", onEvent: terminalCounter(events) }),
    undefined,
    events,
  );
}

function cancelRun(world: World): void {
  const candidates = world.tracked.filter((tracked) => tracked.controller && !tracked.controller.signal.aborted && tracked.settlements === 0);
  if (candidates.length === 0) return;
  const tracked = world.pick(candidates);
  world.note(`cancel ${tracked.label}`);
  tracked.controller!.abort();
}

function observe(world: World): void {
  const known = world.tracked.flatMap((tracked) => (tracked.executionId ? [tracked.executionId] : []));
  if (known.length === 0) return;
  const id = world.pick(known);
  const events: string[] = [];
  world.note(`wait ${short(id)}`);
  // An observer has no listener of its own: count its stream's terminal events.
  const run = world.environment.wait(id);
  const tracked = world.track(`wait ${short(id)}`, run, undefined, events, true);
  tracked.executionId = id;
  void (async () => {
    for await (const event of run.events) if (TERMINAL_EVENTS.has(event.type)) events.push(event.type);
  })();
}

/** A cancel or a retry by id (decision 0026). It draws nothing from the
 * generator: which one, and of which execution, follows from the steps so
 * far, so the streams of earlier seeds change as little as possible. */
function byId(world: World): void {
  const turn = world.log.length;
  if (turn % 2 === 0) {
    const known = world.tracked.flatMap((tracked) => (tracked.executionId ? [tracked.executionId] : []));
    if (known.length === 0) return;
    const id = known[turn % known.length]!;
    const label = `env.cancel ${short(id)}`;
    world.note(label);
    world.trackCancel(label, id, world.environment.cancel(id, { reason: "fuzz" }));
    return;
  }
  const failed = world.database.all().filter((row) => row.status === "terminal" && row.outcome === "failed");
  if (failed.length === 0) return;
  const row = failed[turn % failed.length]!;
  const events: string[] = [];
  const label = `env.retry ${short(row.executionId)} (${describeRow(row)})`;
  world.note(label);
  world.track(label, world.environment.retry(row.executionId, { onEvent: terminalCounter(events) }), undefined, events);
}

function advanceClock(world: World, milliseconds: number): void {
  world.note(`clock +${milliseconds} ms`);
  vi.advanceTimersByTime(milliseconds);
}

async function step(world: World): Promise<void> {
  const choice = world.random();
  if (choice < 0.1) startRun(world);
  else if (choice < 0.44) settleOperation(world, false);
  else if (choice < 0.62) answerModel(world, false);
  else if (choice < 0.74) finishTool(world, false);
  else if (choice < 0.8) decideApproval(world);
  else if (choice < 0.84) cancelRun(world);
  else if (choice < 0.92) advanceClock(world, Math.floor(world.random() * 200));
  else if (choice < 0.96) observe(world);
  else if (choice < 0.985) {
    world.note("env.recover()");
    world.environment.recover().catch(() => undefined);
  } else if (!world.closing && world.chance(0.3)) {
    world.note("env.close()");
    world.closing = world.environment.close();
  } else if (!world.trapped && world.chance(0.1)) {
    trapCore(world);
  } else {
    byId(world);
  }
  await settle();
  world.checkAdmissions();
}

/** The core traps on its next message, as on an `unreachable` (decision
 * 0023): the instance's `apply` is swapped for one that throws what the
 * engine throws on a trap. */
function trapCore(world: World): void {
  world.note("the core will trap on its next message");
  world.trapped = true;
  const core = world.environment.core as unknown as { exports: CoreExports };
  const real = core.exports;
  const RuntimeError = (WebAssembly as unknown as { RuntimeError: ErrorConstructor }).RuntimeError;
  core.exports = {
    ...real,
    memory: real.memory,
    apply: () => {
      throw new RuntimeError("unreachable");
    },
  };
}

/** After a trap, every waiter failed or fails with CORE_FAILED (or had
 * settled before), and the host holds nothing live. */
function checkAfterTrap(world: World): void {
  if (!world.environment.core.failed) return; // the core never got another message
  if (world.environment.coordinator.liveEntries !== 0)
    world.problem(`after the core trapped, the host still tracks ${world.environment.coordinator.liveEntries} live executions`);
}

/** Settles everything pending (operations committed, models answering
 * text, tools returning), the clock moving on, until nothing is left. */
async function drain(world: World): Promise<void> {
  let idleRounds = 0;
  for (let round = 0; round < 10_000; round += 1) {
    const moved = settleOperation(world, true) || answerModel(world, true) || finishTool(world, true);
    idleRounds = moved ? 0 : idleRounds + 1;
    if (idleRounds === 2) return;
    if (!moved) advanceClock(world, 10_000);
    await settle();
    world.checkAdmissions();
  }
  world.problem("drain did not end after 10,000 rounds");
}

/** Once drained: the core holds no admission but suspended and
 * recovery_required ones. */
function checkAdmissionsDrained(world: World): void {
  const allowed = new Set<number>([AdmissionState.None, AdmissionState.Suspended, AdmissionState.RecoveryRequired]);
  for (const agent of world.environment.core.snapshot().agents) {
    if (!allowed.has(agent.admissionState)) world.problem(`after draining, agent slot ${agent.slot} holds admission state ${agent.admissionState}`);
  }
}

function checkWaiters(world: World): void {
  for (const cancel of world.cancels) if (cancel.settlements !== 1) world.problem(`${cancel.label} settled ${cancel.settlements} times after env.close()`);
  for (const tracked of world.tracked) {
    if (tracked.settlements !== 1) world.problem(`${tracked.label} settled ${tracked.settlements} times after env.close()`);
    const expected = tracked.observer ? tracked.terminalEvents.length <= 1 : tracked.terminalEvents.length === 1;
    if (!expected) world.problem(`${tracked.label} saw terminal events ${JSON.stringify(tracked.terminalEvents)} (${JSON.stringify(tracked.outcome)})`);
  }
}

/** `env.recover()` once everything drained resolves every execution held
 * for recovery here: afterwards no agent is held `recovery_required` in
 * the core unless the report says it needs attention. */
async function recoverHere(world: World): Promise<void> {
  world.note("env.recover() after draining");
  const recovering = world.environment.recover();
  await drain(world);
  const report = await recovering;
  await drain(world);
  const attention = report.filter((item) => item.status === "needs_attention");
  const held = world.environment.core.snapshot().agents.filter((agent) => agent.admissionState === AdmissionState.RecoveryRequired);
  if (held.length > 0 && attention.length === 0) {
    world.problem(
      `after env.recover() and draining, agent slots ${held.map((agent) => agent.slot).join(", ")} are still held recovery_required (report: ${JSON.stringify(report.map((item) => `${short(item.executionId)} ${item.status}`))}; unfinished rows: ${
        world.database
          .unfinished()
          .map((row) => `${short(row.executionId)} ${describeRow(row)}`)
          .join(", ") || "none"
      })`,
    );
  }
}

/** A new environment on the same rows, with every operation committed at
 * once and models answering text: each unfinished execution ends or stays
 * suspended. */
async function recoverElsewhere(world: World): Promise<void> {
  const store = new SimulatedStore(world.database, { autoCommit: true });
  const environment = await Phronomy.open({ store, logger: { warn: () => undefined } });
  try {
    for (const agent of world.agents) {
      environment.agent({
        id: agent.id,
        instructions: "You help.",
        model: scriptedModel(() => ({ text: "recovered" })),
        tools: {
          lookup: tool({ inputSchema: z.object({ orderId: z.string() }), execute: () => ({ status: "shipped" }) }),
          refund: tool({ inputSchema: z.object({ orderId: z.string() }), needsApproval: true, execute: () => ({ refunded: true }) }),
        },
      });
    }
    for (let round = 0; round < 6; round += 1) {
      await settle();
      vi.advanceTimersByTime(10_000);
      await settle();
      const left = world.database.unfinished().filter((row) => row.status !== "suspended");
      if (left.length === 0) return;
      if (round === 5)
        world.problem(
          `after recovery in a new environment, executions are still unfinished: ${left.map((row) => `${short(row.executionId)} ${describeRow(row)}`).join(", ")}`,
        );
      else await environment.recover();
    }
  } finally {
    const closing = environment.close();
    await settle();
    await closing;
  }
}

async function fuzzOnce(seed: number): Promise<World> {
  ids.next = 0;
  const random = generator(seed);
  const world = new World(seed, random);
  await world.open();
  const steps = STEPS_MIN + Math.floor(random() * (STEPS_MAX - STEPS_MIN));
  for (let index = 0; index < steps; index += 1) await step(world);
  world.draining = true;
  await drain(world);
  if (world.trapped) checkAfterTrap(world);
  else if (!world.closing) {
    checkAdmissionsDrained(world);
    await recoverHere(world);
  }
  world.closing ??= world.environment.close();
  await drain(world);
  await world.closing;
  await settle();
  checkWaiters(world);
  await recoverElsewhere(world);
  world.database.close();
  return world;
}

describe("the host's carrying out of effects, against a simulated store and clock", () => {
  beforeAll(async () => {
    // The AI SDK is loaded on a process's first model call, a real import
    // that outlasts the few event-loop rounds `drain` waits for progress:
    // the first seed of a run then found its model calls still waiting and
    // reported admissions held (seen 1 time in 4 on one seed). Loaded
    // first, every seed sees only simulated time.
    await Promise.all([loadAiSdk(), loadAiSdkInternals()]); // a direct model call needs both (0093)
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
  });
  afterAll(() => {
    vi.useRealTimers();
  });

  // Seeds that once failed, each a bug fixed: they run on every `npm test` whatever the base seed.
  it.each([[3389776446, "env.close() called while env.retry reopened an execution cancelled while suspended resolved once it was suspended again"]])(
    "seed %i keeps its invariants: %s",
    async (seed) => {
      const world = await fuzzOnce(seed);
      expect(world.problems, `host fuzz seed ${seed}\nlast steps:\n${world.log.slice(-60).join("\n")}`).toEqual([]);
    },
    30_000,
  );

  it(
    `keeps its invariants over ${RUNS} seeded runs (HOST_FUZZ_SEED=${BASE_SEED})`,
    async () => {
      console.log(`[host fuzz] HOST_FUZZ_SEED=${BASE_SEED} HOST_FUZZ_RUNS=${RUNS}`);
      const totals = { waiters: 0, completed: 0, failed: 0, left: 0, refused: 0 };
      const codes: Record<string, number> = {};
      const byIdTotals = { cancels: 0, retries: 0, retriesCompleted: 0 };
      for (let index = 0; index < RUNS; index += 1) {
        const seed = (BASE_SEED + index) >>> 0;
        let world: World;
        if (process.env.HOST_FUZZ_TRACE) process.stderr.write(`[host fuzz] seed ${seed}\n`);
        try {
          world = await fuzzOnce(seed);
        } catch (error) {
          throw new Error(
            `host fuzz seed ${seed} threw: ${error instanceof Error ? error.stack : String(error)}\nreplay: HOST_FUZZ_SEED=${seed} HOST_FUZZ_RUNS=1`,
          );
        }
        const replay = `host fuzz seed ${seed} — replay: HOST_FUZZ_SEED=${seed} HOST_FUZZ_RUNS=1 npx vitest run test/fuzz/host-effects.test.ts`;
        expect(world.problems, `${replay}\nlast steps:\n${world.log.slice(-60).join("\n")}`).toEqual([]);
        totals.waiters += world.tracked.length;
        byIdTotals.cancels += world.cancels.length;
        for (const { label, outcome } of world.tracked) {
          if (!label.startsWith("env.retry")) continue;
          byIdTotals.retries += 1;
          if (outcome?.ok) byIdTotals.retriesCompleted += 1;
        }
        for (const { outcome } of world.tracked) {
          const code = outcome?.ok ? outcome.outcome : (outcome?.code ?? "unsettled");
          codes[code] = (codes[code] ?? 0) + 1;
          if (outcome?.ok) totals.completed += 1;
          else if (outcome && ENDING_CODES.has(outcome.code)) totals.failed += 1;
          else if (outcome && LEFT_CODES.has(outcome.code)) totals.left += 1;
          else totals.refused += 1;
        }
      }
      console.log(`[host fuzz] waiters: ${JSON.stringify(totals)}; by outcome: ${JSON.stringify(codes)}; by id: ${JSON.stringify(byIdTotals)}`);
      // The runs went somewhere: some completed, some failed with a reason
      // (over enough runs; a replay of one seed may do neither).
      if (RUNS >= 20) {
        expect(totals.completed).toBeGreaterThan(0);
        expect(totals.failed).toBeGreaterThan(0);
      }
    },
    Math.max(120_000, RUNS * 500),
  );
});
