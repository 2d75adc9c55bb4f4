// The whole-host simulation's world (docs/decisions/0063): a seeded
// generator, the simulated clock (vitest's fake timers, set by the test),
// a cluster store (cluster-store.ts) and a few processes, each the REAL
// runtime — `Phronomy.open` on its own store handle, one agent definition
// with a scripted model whose every turn waits for the world, and tools
// that record each call in the world's log and wait for the world too.
//
// Each step the generator picks one thing to happen: a start (busy policy
// reject / enqueue / interrupt, keyed or not, with a timeout or not, at any
// process, owner of the conversation or not), an answer to a suspended
// execution's wait — an approval or a typed wait, answered rightly or
// not, sometimes twice or racing a cancel (world-waits.ts) —, a keyed
// signal (before its wait commits, while it waits, twice, after its
// timeout: world-durable-waits.ts), a schedule made, run now or cancelled
// (world-schedules.ts), a cancel, a pending write settling (committed, failed, outcome
// unknown committed or not), a model turn or a tool call finishing, the
// clock moving on (timeouts, lease expiry), or a fault: a process killed
// (kill -9: nothing it does reaches the world again), a dead process
// restarted (a new Environment, a new owner name, on the same store), a
// process killed while a write of its is in flight (a timer's fire, a
// child's end, a parent's resume), a
// process losing its connection for a while, its lease renewals stalling.
// After every step the safety invariants are checked; after the last,
// faults stop, dead processes restart, each process is told `env.recover()`
// once (standing in for PostgreSQL's partition scan, which the simulated
// store does not have), and time runs on with everything answered until
// the world is quiet — then the liveness invariants are checked.

import { z } from "zod";
import { scriptedModel, type ScriptedTurn } from "../../host/agent/scripted-model.js";
import { agentTool, Phronomy, tool, type DefinedAgent, type Environment, type Run } from "../../host/index.js";
import type { SqliteConnection } from "../../host/store/sqlite/driver.js";
import { ConversationFlag, ConversationPhase } from "../../assembly/abi.js";
import { filedStartCounts, startsUnsettled } from "./cluster-start-inbox.js";
import { Cluster, type ClusterStore, type PendingWrite, type WriteFate } from "./cluster-store.js";
import { askDateTool, WaitAnswers, type DrawnAnswer } from "./world-waits.js";
import { DurableWaits, paymentTool, waitTool, type SentSignal } from "./world-durable-waits.js";
import { WorldSchedules } from "./world-schedules.js";

/** Processes, conversations and steps per seed: small, so a seed takes
 * milliseconds and CI runs thousands. */
export interface WorldSize {
  readonly processes: number;
  readonly conversations: number;
  readonly steps: number;
}

/** What a seed's processes open with beside the defaults. */
export interface WorldModes {
  /** Starts at a process not holding their conversation are filed for the
   * holder (PostgreSQL's start inbox, cluster-start-inbox.ts). */
  readonly startInbox?: boolean;
  /** By process index: opened with PostgreSQL's `takeIdleHere` (with the
   * start inbox): a start landing where its conversation, which has
   * nothing anywhere, is not held moves it there (docs/decisions/0101). */
  readonly takeIdleHere?: readonly boolean[];
}

/** The lease length of the simulated store; the tick renews every third. */
const leaseMs = 3_000;
/** Model turns before the scripted model answers with text. */
const toolTurnsMax = 3;
/** Drain rounds (each settles everything and moves the clock a lease on)
 * before a world still busy is a liveness failure. */
const drainRoundsMax = 20;
const busyPolicies = ["reject", "enqueue", "interrupt"] as const;

type Random = () => number;

interface Waiting<T> {
  readonly label: string;
  readonly process: SimProcess;
  readonly resolve: (value: T) => void;
  readonly reject: (error: Error) => void;
  /** A model call's conversation so far, as JSON (a child's names its ask). */
  readonly prompt?: string;
}

/** A caller's promise: a start, a resume, a cancel. */
interface Caller {
  readonly label: string;
  readonly process: SimProcess;
  /** The incarnation that made the call (a killed one's calls died with it). */
  readonly owner: string;
  readonly key: string | undefined;
  readonly conversation: string;
  executionId: string | undefined;
  settlements: number;
  outcome: string | undefined;
  /** Whether its process held the conversation's lease when it settled. */
  heldWhenSettled: boolean;
  /** A resume's answer (world-waits.ts). */
  answer?: DrawnAnswer;
}

/** One run of a tool, by its idempotency key. */
interface ToolRun {
  readonly owner: string;
  readonly step: number;
}

/** One process: its current incarnation's store and environment. */
export class SimProcess {
  incarnation = 0;
  store!: ClusterStore;
  environment: Environment | undefined;
  agent: DefinedAgent | undefined;
  /** The child agent (`ask`): its conversations are `<parent execution>:<call>`. */
  helper: DefinedAgent | undefined;
  alive = false;

  constructor(readonly name: string) {}

  get owner(): string {
    return `${this.name}.${this.incarnation}`;
  }
}

export class World {
  readonly cluster: Cluster;
  readonly processes: SimProcess[];
  readonly log: string[] = [];
  readonly problems: string[] = [];
  readonly models: Waiting<ScriptedTurn>[] = [];
  readonly tools: Waiting<unknown>[] = [];
  readonly callers: Caller[] = [];
  /** Tool runs by idempotency key; a key run again needs a recorded reason. */
  private readonly toolRuns = new Map<string, ToolRun[]>();
  /** Per process incarnation, the steps at which a fault hit it (a kill,
   * a write failed or of unknown outcome, a connection lost, renewals
   * stalled): the recorded reasons a tool call may run again. */
  private readonly disruptions = new Map<string, number[]>();
  /** Execution ids by idempotency key, per conversation. */
  private readonly keyed = new Map<string, string>();
  private committedChecked = 0;
  /** The answers given to waits, and their invariants. */
  readonly waits: WaitAnswers;
  /** Timers, event waits and signals, child waits, and their invariants. */
  readonly durable: DurableWaits;
  /** Scheduled starts and their invariants (world-schedules.ts). */
  readonly schedules: WorldSchedules;
  private readonly waitProblemsReported = new Set<string>();
  step = 0;
  faulty = true;
  private answers = 0;

  /** `database`: an earlier world's, emptied and used again (cheaper than migrating a new one). */
  constructor(
    readonly seed: number,
    readonly random: Random,
    readonly size: WorldSize,
    database?: SqliteConnection,
    /** PostgreSQL's start inbox (a start at a process not holding its
     * conversation is filed for the holder) and the processes opened with
     * `takeIdleHere`, drawn per seed. */
    readonly modes: WorldModes = {},
  ) {
    this.cluster = new Cluster(leaseMs, false, database);
    this.cluster.startInbox = modes.startInbox === true;
    this.processes = Array.from({ length: size.processes }, (_, index) => new SimProcess(`p${index + 1}`));
    this.waits = new WaitAnswers(random);
    this.durable = new DurableWaits(random, this.cluster.connection);
    this.schedules = new WorldSchedules(random, this.cluster.connection);
    this.cluster.scheduleFate = () => (this.faulty ? this.pick(writeFates) : "commit");
    this.cluster.onFault = (owner) => this.disrupt(owner);
    this.cluster.onMove = (agentId, former, mover) => {
      this.count("moved");
      this.note(`  ${agentId} moved from ${former ?? "nobody"} to ${mover} (its home)`);
    };
    this.cluster.onMovedRefusal = (agentId, owner) => {
      this.count("preparation refused naming the home");
      this.note(`  ${owner}'s preparation of ${agentId} refused: it lives elsewhere now`);
    };
    this.cluster.onMovedRetake = () => this.count("retaken as moved");
    this.cluster.onTakeover = (agentId, former, taker) => {
      this.note(`  lease of ${agentId} moves from ${former} to ${taker}`);
      this.disrupt(former);
    };
    this.cluster.onLapsed = (agentId, owner, epoch) => {
      this.note(`  lease of ${agentId} lapsed at ${owner}, taken again at epoch ${epoch}`);
      this.disrupt(owner);
    };
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }

  chance(probability: number): boolean {
    return this.random() < probability;
  }

  note(line: string): void {
    if (process.env["SIM_TRACE"]) process.stderr.write(`${line}\n`);
    this.log.push(`${this.step} ${Date.now()} ${line}`);
  }

  /** How often the rarer draws happened (the run's counts print them). */
  readonly drawn: Record<string, number> = {};

  count(what: string): void {
    this.drawn[what] = (this.drawn[what] ?? 0) + 1;
  }

  problem(line: string): void {
    this.problems.push(`step ${this.step}: ${line}`);
  }

  alive(): SimProcess[] {
    return this.processes.filter((process) => process.alive);
  }

  private disrupt(owner: string): void {
    const list = this.disruptions.get(owner) ?? [];
    list.push(this.step);
    this.disruptions.set(owner, list);
  }

  // -- processes --------------------------------------------------------------------------------

  async start(process: SimProcess): Promise<void> {
    process.incarnation += 1;
    process.store = this.cluster.storeFor(process.owner, this.takesIdle(process));
    process.alive = true;
    this.note(`open ${process.owner}`);
    const owner = process.owner;
    const opening = Phronomy.open({ store: process.store, logger: { warn: (message) => this.note(`  warn at ${owner}: ${message.slice(0, 240)}`) } });
    await settle();
    process.environment = await opening;
    const tools = {
      lookup: this.recordingTool(process, "lookup", false),
      refund: this.recordingTool(process, "refund", true),
      askDate: askDateTool(),
      wait: waitTool(),
      awaitPayment: paymentTool(),
    };
    // The child agent (docs/decisions/0079): the same tools but `ask`.
    const helper = (process.helper = process.environment.agent({
      name: "helper",
      instructions: "You look things up.",
      model: scriptedModel(({ turn, messages }) => this.modelCall(process, process.owner, turn, "helper", JSON.stringify(messages))),
      tools,
    }));
    process.agent = process.environment.agent({
      name: "support",
      instructions: "You help.",
      model: scriptedModel(({ turn, messages }) => this.modelCall(process, process.owner, turn, "support", JSON.stringify(messages))),
      tools: { ...tools, ask: agentTool(helper, { description: "Asks the helper" }) },
    });
  }

  kill(process: SimProcess): void {
    this.note(`kill -9 ${process.owner}`);
    this.disrupt(process.owner);
    process.alive = false;
    process.store.kill();
    // A write in flight reached the database or did not.
    for (const write of this.cluster.pending.filter((pending) => pending.handle === process.store)) {
      const landed = this.chance(0.5);
      this.note(`  in flight at the kill: ${write.operation.type} ${landed ? "committed" : "lost"}`);
      this.cluster.pending.splice(this.cluster.pending.indexOf(write), 1);
      if (landed) process.store.commitOnCrash(write);
    }
    for (const list of [this.models, this.tools] as Waiting<unknown>[][]) {
      for (let index = list.length - 1; index >= 0; index -= 1) if (list[index]!.process === process) list.splice(index, 1);
    }
  }

  private modelCall(process: SimProcess, owner: string, turn: number, agent: string, prompt: string): Promise<ScriptedTurn> {
    if (!process.alive || process.owner !== owner) return new Promise(() => undefined);
    return new Promise((resolve, reject) => this.models.push({ label: `model turn ${turn} of ${agent} at ${owner}`, process, resolve, reject, prompt }));
  }

  private recordingTool(process: SimProcess, name: string, needsApproval: boolean) {
    const owner = () => process.owner;
    return tool({
      description: needsApproval ? "Refunds an order" : "Looks an order up",
      inputSchema: z.object({ orderId: z.string() }),
      needsApproval,
      execute: ({ orderId }, { idempotencyKey, executionId }) => {
        const calledAt = owner();
        if (!process.alive) return new Promise(() => undefined);
        this.note(`tool ${name} ${orderId} at ${calledAt} key ${idempotencyKey} of ${executionId}`);
        this.recordToolRun(idempotencyKey, calledAt);
        this.checkBarrier(executionId, idempotencyKey);
        return new Promise((resolve, reject) => this.tools.push({ label: `${name} ${orderId} at ${calledAt}`, process, resolve, reject }));
      },
    });
  }

  /** A tool call runs only once its batch's barrier is durable, under the
   * key that barrier recorded. */
  private checkBarrier(executionId: string, key: string): void {
    const recorded = this.cluster.connection
      .prepare(
        "SELECT 1 FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE execution_id = ? AND kind = 'tool_barrier' AND instr(payload, ?) > 0",
      )
      .get(executionId, JSON.stringify(key));
    if (recorded === undefined) this.problem(`tool call ${key} ran with no committed tool barrier recording that key`);
  }

  /** No tool call runs twice under one key without a recorded reason. */
  private recordToolRun(key: string, owner: string): void {
    const runs = this.toolRuns.get(key) ?? [];
    for (const earlier of runs) {
      const reason = (this.disruptions.get(earlier.owner) ?? []).some((step) => step >= earlier.step);
      if (!reason) this.problem(`tool call ${key} ran again at ${owner} (first at ${earlier.owner}, step ${earlier.step}) with no fault recorded since`);
    }
    runs.push({ owner, step: this.step });
    this.toolRuns.set(key, runs);
  }

  // -- workload ---------------------------------------------------------------------------------

  conversationId(): string {
    return `c${Math.floor(this.random() * this.size.conversations)}`;
  }

  /** Whether the process opens with `takeIdleHere`. */
  private takesIdle(process: SimProcess): boolean {
    return this.modes.startInbox === true && this.modes.takeIdleHere?.[this.processes.indexOf(process)] === true;
  }

  /** New conversations started so far (`n0`, `n1`, …). */
  private fresh = 0;

  /** A new conversation started at one process and, at once, at another:
   * the second start lands where the first holds it with nothing written
   * yet — moved there when that process takes idle conversations. */
  startFresh(first: SimProcess, second: SimProcess): void {
    const conversation = `n${this.fresh++}`;
    this.count("new conversation at two processes");
    this.startRun(first, conversation);
    this.startRun(second, conversation);
  }

  startRun(process: SimProcess, conversation = this.conversationId()): void {
    const onBusy = this.pick(busyPolicies);
    const key = this.chance(0.3) ? `k${Math.floor(this.random() * 3)}` : undefined;
    const timeoutMs = this.chance(0.2) ? 200 + Math.floor(this.random() * 4_000) : undefined;
    const label = `start ${this.callers.length} at ${process.owner} on ${conversation} ${onBusy}${key ? ` key ${key}` : ""}${timeoutMs ? ` timeout ${timeoutMs}` : ""}`;
    this.note(label);
    const run = process.agent!.conversation(conversation).start(`question ${this.callers.length}`, {
      onBusy,
      ...(key ? { idempotencyKey: key } : {}),
      ...(timeoutMs ? { timeoutMs } : {}),
    });
    this.track(this.caller(label, process, conversation, key), run);
  }

  private caller(label: string, process: SimProcess, conversation: string, key?: string): Caller {
    const caller: Caller = {
      label,
      process,
      owner: process.owner,
      key,
      conversation,
      executionId: undefined,
      settlements: 0,
      outcome: undefined,
      heldWhenSettled: false,
    };
    this.callers.push(caller);
    return caller;
  }

  private track(caller: Caller, run: Run): void {
    run.executionId.then(
      (id) => this.knowExecution(caller, id),
      () => undefined,
    );
    run.result.then(
      (result) => this.settled(caller, result.outcome, result.executionId),
      (error: { code?: string; executionId?: string; message?: string }) => this.settled(caller, String(error.code), error.executionId, error.message),
    );
  }

  private knowExecution(caller: Caller, executionId: string): void {
    caller.executionId ??= executionId;
    if (caller.key === undefined) return;
    const slot = `${caller.conversation}/${caller.key}`;
    const known = this.keyed.get(slot);
    if (known === undefined) this.keyed.set(slot, executionId);
    else if (known !== executionId) this.problem(`idempotency key ${slot} ran as two executions: ${known} and ${executionId}`);
  }

  private settled(caller: Caller, outcome: string, executionId: string | undefined, message?: string): void {
    caller.settlements += 1;
    caller.outcome = outcome;
    caller.heldWhenSettled = caller.process.store.heldEpochOf(caller.conversation) !== undefined;
    if (executionId !== undefined) this.knowExecution(caller, executionId);
    this.note(`  settled: ${caller.label} → ${outcome}${executionId ? ` (${executionId})` : ""}`);
    if (caller.settlements > 1) this.problem(`${caller.label} settled ${caller.settlements} times`);
    const refusalExpected = caller.answer?.mustBeRefused === true && outcome === "INVALID_INPUT";
    if (bugCodes.has(outcome.replace(/^cancel:/, "")) && !refusalExpected)
      this.problem(`${caller.label} settled ${outcome}, which only a bug produces: ${message ?? ""}`);
    const wrong = caller.answer === undefined ? undefined : this.waits.checkSettled(caller.answer, outcome);
    if (wrong !== undefined) this.problem(`${caller.label}: ${wrong}`);
    if (outcome === "completed" && executionId !== undefined) {
      const row = this.cluster.execution(executionId);
      if (row?.status !== "terminal" || row.outcome !== "completed") this.problem(`${caller.label} completed, but its row is ${row?.status}/${row?.outcome}`);
    }
  }

  /** An answer to a suspended execution's wait (world-waits.ts); now and
   * then a second one (the same answer or another, here or at another
   * process, which files it for the owner) or a cancel racing it. */
  decide(process: SimProcess): boolean {
    const suspended = this.cluster.unfinished().filter((row) => row.status === "suspended");
    if (suspended.length === 0) return false;
    const row = this.pick(suspended);
    const wait = WaitAnswers.pendingOf(row.approvalRequest);
    if (wait === undefined) return false;
    const answer = this.waits.draw(wait);
    this.answer(process, row.executionId, row.agentId, answer);
    const second = this.random();
    if (second < 0.3) this.answer(this.pick(this.alive()), row.executionId, row.agentId, second < 0.15 ? answer : this.waits.draw(wait));
    else if (second < 0.4) this.cancelExecution(this.pick(this.alive()), row.executionId);
    return true;
  }

  private answer(process: SimProcess, executionId: string, agentId: string, answer: DrawnAnswer): void {
    const label = `resume ${executionId} at ${process.owner} ${answer.label}`;
    this.note(label);
    const caller = this.caller(label, process, agentId);
    caller.answer = answer;
    if ("fire" in answer.decision && answer.decision.waitId !== undefined) this.durable.handFired.add(answer.decision.waitId);
    this.waits.given(answer, caller);
    const agent = agentId.includes(":") ? process.helper! : process.agent!;
    this.track(caller, agent.conversation(agentId).resume(executionId, answer.decision));
  }

  cancel(process: SimProcess): boolean {
    const ids = [
      ...this.cluster.unfinished().map((row) => row.executionId),
      ...this.cluster.connection
        .prepare("SELECT execution_id FROM queued_messages ORDER BY execution_id")
        .all()
        .map((row) => String(row["execution_id"])),
    ];
    if (ids.length === 0) return false;
    this.cancelExecution(process, this.pick(ids));
    return true;
  }

  private cancelExecution(process: SimProcess, executionId: string): void {
    const label = `cancel ${executionId} at ${process.owner}`;
    this.note(label);
    const caller = this.caller(label, process, "?");
    process.environment!.cancel(executionId, { reason: "simulated" }).then(
      (result) => this.settled(caller, `cancel:${result.outcome}`, undefined),
      (error: { code?: string; message?: string }) => this.settled(caller, `cancel:${String(error.code)}`, undefined, error.message),
    );
  }

  answerModel(index: number, draining: boolean): void {
    const call = this.models.splice(index, 1)[0]!;
    const turn = Number(/model turn (\d+)/.exec(call.label)?.[1] ?? 0);
    const helper = call.label.includes(" of helper ");
    this.answers += 1;
    const text = { text: `answer ${this.answers}` };
    const choice = this.random();
    const order = this.durable.order();
    const answer: ScriptedTurn =
      draining || turn >= toolTurnsMax || choice < 0.25
        ? text
        : choice < 0.42
          ? { toolCalls: [{ toolName: "lookup", input: { orderId: `${this.answers}` } }] }
          : choice < 0.52
            ? { toolCalls: [{ toolName: "refund", input: { orderId: `${this.answers}` } }] }
            : choice < 0.6
              ? { toolCalls: [{ toolName: "askDate", input: { question: `when ${this.answers}` } }] }
              : choice < 0.72
                ? { toolCalls: [{ toolName: "wait", input: { ms: Math.floor(this.random() * 4_000) } }] }
                : choice < 0.84
                  ? { toolCalls: [{ toolName: "awaitPayment", input: { order } }] }
                  : choice < 0.94 && !helper
                    ? { toolCalls: [{ toolName: "ask", input: { input: `ask ${this.answers}` } }] }
                    : { error: `simulated provider failure ${this.answers}` };
    this.note(`${call.label} → ${JSON.stringify(answer)}`);
    call.resolve(answer);
    // A signal before its wait is committed (docs/decisions/0077: kept, taken at the commit).
    if (answer.toolCalls?.[0]?.toolName === "awaitPayment" && this.chance(0.4)) {
      this.count("signal before its wait");
      this.signal(this.pick(this.alive()), order);
    }
    // A child's last turn: its parent's process dies now and then, so the
    // child's end races the parent's recovery (docs/decisions/0086).
    if (helper && answer === text && !draining && this.chance(0.5)) this.killParentOf(call.prompt ?? "");
  }

  /** Kills the process holding the conversation whose suspended execution
   * waits on the child asked by this prompt (if another process lives). */
  private killParentOf(prompt: string): void {
    const ask = /ask \d+/.exec(prompt)?.[0];
    if (ask === undefined) return;
    const parent = this.cluster
      .unfinished()
      .find(
        (row) =>
          row.status === "suspended"
          && (row.approvalRequest as { kind?: string; child?: { input?: unknown } } | null)?.kind === "child"
          && JSON.stringify(row.approvalRequest).includes(`"${ask}"`),
      );
    const holder = parent === undefined ? undefined : this.cluster.leases.get(parent.agentId)?.owner;
    const process = this.alive().find((candidate) => candidate.owner === holder);
    if (process === undefined || this.alive().length < 2) return;
    this.note(`  the child of ${parent!.executionId} ends: its parent's process dies`);
    this.count("parent killed as its child ends");
    this.kill(process);
  }

  /** A keyed signal at the process (world-durable-waits.ts): now and then
   * twice, with the same payload or another, at another process. */
  signal(process: SimProcess, order?: string): void {
    this.sendSignal(process, this.durable.drawSignal(order));
    if (this.chance(0.25)) this.sendSignal(this.pick(this.alive()), this.durable.drawSignal(/pay:(\w+)/.exec(this.durable.signals.at(-1)!.key)![1]));
  }

  private sendSignal(process: SimProcess, drawn: { key: string; token: string }): void {
    const ifWaiting = this.chance(0.2);
    const label = `signal ${drawn.key} ${drawn.token} at ${process.owner}${ifWaiting ? " if waiting" : ""}`;
    this.note(label);
    const signal: SentSignal = { label, key: drawn.key, token: drawn.token, result: undefined };
    this.durable.signals.push(signal);
    const caller = this.caller(label, process, "?");
    process.environment!.signal(drawn.key, { paid: drawn.token }, ifWaiting ? { ifWaiting } : {}).then(
      (result) => {
        signal.result = `signal:${result.status}`;
        if (result.status === "resumed") Object.assign(signal, { executionId: result.executionId, waitId: result.waitId });
        const wrong = result.status === "resumed" ? this.durable.checkResumed(signal) : undefined;
        if (wrong !== undefined) this.problem(wrong);
        this.settled(caller, signal.result, undefined);
      },
      (error: { code?: string; message?: string }) => {
        signal.result = String(error.code);
        this.settled(caller, signal.result, undefined, error.message);
      },
    );
  }

  /** A schedule made, run now or cancelled at the process (world-schedules.ts). */
  scheduleStep(process: SimProcess): void {
    const choice = this.random();
    if (choice < 0.4 || this.schedules.made.length === 0) this.makeSchedule(process);
    else if (choice < 0.75) this.runSchedule(process, this.pick(this.schedules.made));
    else this.cancelSchedule(process, this.pick(this.schedules.made));
  }

  private makeSchedule(process: SimProcess): void {
    const conversation = this.conversationId();
    const timing = this.schedules.drawTiming();
    const onBusy = this.pick(busyPolicies);
    const label = `schedule ${this.callers.length} at ${process.owner} on ${conversation} ${JSON.stringify(timing)} ${onBusy}`;
    this.note(label);
    this.count("schedule made");
    const caller = this.caller(label, process, conversation);
    process
      .agent!.conversation(conversation)
      .schedule(`scheduled ${this.callers.length}`, { ...timing, onBusy })
      .then(
        (made) => {
          this.schedules.made.push({ scheduleId: made.scheduleId, agentId: conversation });
          this.note(`  schedule ${made.scheduleId} due at ${made.nextRunAt}`);
          this.settled(caller, "schedule:made", undefined);
        },
        (error: { code?: string; message?: string }) => this.settled(caller, `schedule:${String(error.code)}`, undefined, error.message),
      );
  }

  private runSchedule(process: SimProcess, made: { scheduleId: string; agentId: string }): void {
    const waitMs = this.schedules.drawWaitMs();
    const label = `run schedule ${made.scheduleId} at ${process.owner} wait ${waitMs}`;
    this.note(label);
    this.count("schedule run now");
    const caller = this.caller(label, process, made.agentId);
    process.environment!.runSchedule(made.scheduleId, { waitMs }).then(
      (after) => this.settled(caller, `run:${after.firingSlotAt !== undefined ? "claimed" : (after.lastFiring?.outcome ?? "none")}`, undefined),
      (error: { code?: string; message?: string; details?: { state?: string; reason?: string } }) => {
        // Refused because it fired at this very instant (decision 0098), is firing, cancelled or done
        // (or changed meanwhile): the world asks blind.
        const invalid = error.code === "INVALID_INPUT";
        const notActive = invalid && (error.details?.state !== undefined || /changed meanwhile/.test(error.message ?? ""));
        const outcome =
          invalid && error.details?.reason === "fired_this_instant" ? "run:fired_this_instant" : notActive ? "run:not_active" : `run:${String(error.code)}`;
        this.settled(caller, outcome, undefined, error.message);
      },
    );
  }

  private cancelSchedule(process: SimProcess, made: { scheduleId: string; agentId: string }): void {
    const label = `cancel schedule ${made.scheduleId} at ${process.owner}`;
    this.note(label);
    this.count("schedule cancelled");
    const caller = this.caller(label, process, made.agentId);
    process.environment!.cancelSchedule(made.scheduleId).then(
      (after) => this.settled(caller, `cancel-schedule:${after.state}`, undefined),
      (error: { code?: string; message?: string }) => this.settled(caller, `cancel-schedule:${String(error.code)}`, undefined, error.message),
    );
  }

  /** kill -9 of a process while a commit of its is in flight (a timer
   * firing, a child's end, a resume): it lands or not. */
  killDuringCommit(): void {
    // Mostly an answer's commit (a timer firing, a signal, a child's end) when one is in flight.
    const answers = this.commitsInFlight().filter((pending) => pending.operation.type === "approvalCommit");
    const write = this.pick(answers.length > 0 && this.chance(0.7) ? answers : this.commitsInFlight());
    const process = this.alive().find((candidate) => candidate.store === write.handle);
    if (process === undefined) return;
    this.note(`kill during ${write.operation.type} #${write.number}`);
    this.count(`kill during ${write.operation.type}`);
    this.kill(process);
  }

  private commitsInFlight(): PendingWrite[] {
    return this.cluster.pending.filter((write) => write.operation.type === "approvalCommit" || write.operation.type === "terminalCommit");
  }

  finishTool(index: number, draining: boolean): void {
    const call = this.tools.splice(index, 1)[0]!;
    if (!draining && this.chance(0.1)) {
      this.note(`${call.label} throws`);
      call.reject(new Error(`simulated tool failure at step ${this.step}`));
      return;
    }
    this.note(`${call.label} returns`);
    call.resolve({ status: "shipped", step: this.step });
  }

  settleWrite(write: PendingWrite, draining: boolean): void {
    const fate: WriteFate = draining ? "commit" : this.pick(writeFates);
    this.note(
      `write #${write.number} ${write.operation.type} of ${write.handle.owner} ${"executionId" in write.operation ? write.operation.executionId : ""} → ${fate}`,
    );
    if (fate !== "commit") this.disrupt(write.handle.owner);
    write.settle(fate);
  }

  // -- faults -----------------------------------------------------------------------------------

  disconnect(process: SimProcess): void {
    const ms = 100 + Math.floor(this.random() * leaseMs * 2);
    this.note(`${process.owner} loses its connection for ${ms} ms`);
    this.disrupt(process.owner);
    process.store.disconnectedUntil = Date.now() + ms;
  }

  stall(process: SimProcess): void {
    const ms = leaseMs + Math.floor(this.random() * leaseMs * 2);
    this.note(`${process.owner} stops renewing its leases for ${ms} ms`);
    this.disrupt(process.owner);
    process.store.stalledUntil = Date.now() + ms;
  }

  /** A partition move: the process gives one of its leases up (balancing). */
  move(process: SimProcess): void {
    const agentId = process.store.giveUpLease();
    if (agentId === undefined) return;
    this.note(`${process.owner} gives the lease of ${agentId} up (a partition move)`);
    this.disrupt(process.owner);
  }

  // -- invariants -------------------------------------------------------------------------------

  /** Safety, after every step: no fenced write landed outside its lease,
   * no execution ended twice, a queued message ran only as its queue's head,
   * the core counts the messages each queue holds. */
  checkSafety(): void {
    for (const write of this.cluster.committed.slice(this.committedChecked)) {
      if (!fencedTypes.has(write.type)) continue;
      if (write.fenceEpoch === undefined)
        this.problem(`${write.type} of ${write.executionId} by ${write.owner} landed unfenced (the process never asked for agent ${write.agentId})`);
      else if (write.lease?.owner !== write.owner || write.lease.epoch !== write.fenceEpoch) {
        this.problem(
          `${write.type} of ${write.executionId} by ${write.owner} at epoch ${write.fenceEpoch} landed while the lease was ${JSON.stringify(write.lease)}`,
        );
      }
    }
    this.committedChecked = this.cluster.committed.length;
    for (const line of this.schedules.checkFirings()) this.problem(line);
    for (const line of [...this.waits.checkCommitted(this.cluster.connection), ...this.durable.checkDecided()]) {
      if (this.waitProblemsReported.has(line)) continue;
      this.waitProblemsReported.add(line);
      this.problem(line);
    }
    // The core counts each conversation's queued messages (docs/decisions/0062):
    // its count is the host queue's after every step.
    for (const process of this.processes) {
      if (!process.alive) continue;
      for (const drift of process.environment?.queues.countDrift() ?? []) this.problem(`${process.owner}: ${drift}`);
      for (const drift of process.environment?.conversations.useDrift() ?? []) this.problem(`${process.owner}: ${drift}`);
    }
    for (const violation of this.cluster.queueOrderViolations.splice(0)) {
      this.problem(
        `${violation.owner} prepared queued message ${violation.executionId} of ${violation.agentId} ahead of ${violation.passed.join(", ")} queued before it`,
      );
    }
  }

  /** Liveness, once quiet: nothing unfinished or queued, every caller of a
   * process still alive settled, nothing waiting. */
  checkQuiet(): void {
    for (const row of this.cluster.unfinished())
      this.problem(`execution ${row.executionId} of ${row.agentId} is still ${row.status}/${row.phase} once the world is quiet`);
    for (const row of this.cluster.connection.prepare("SELECT execution_id, agent_id FROM queued_messages").all()) {
      this.problem(`message ${String(row["execution_id"])} of ${String(row["agent_id"])} is still queued once the world is quiet`);
    }
    for (const caller of this.callers) this.checkCaller(caller);
    for (const executionId of startsUnsettled(this.cluster.connection))
      this.problem(`the start filed as ${executionId} is still unsettled once the world is quiet`);
    for (const line of this.durable.checkQuiet()) this.problem(line);
    for (const line of this.schedules.checkQuiet(Date.now())) this.problem(line);
    for (const process of this.alive()) this.checkOwnership(process);
    for (const process of this.alive()) if (process.environment !== undefined) this.checkReleased(process.owner, process.environment);
  }

  /** No conversation stays "owned elsewhere" in a process's core while that
   * process holds its lease (docs/decisions/0062, "Owned elsewhere"): the
   * store's takeover is told to the core, a stale phase is not kept. */
  private checkOwnership(process: SimProcess): void {
    const environment = process.environment;
    if (environment === undefined) return;
    for (const entry of environment.coordinator.agentEntries()) {
      if (environment.core.conversation(entry.slot).phase !== ConversationPhase.OwnedElsewhere) continue;
      const epoch = process.store.heldEpochOf(entry.id);
      if (epoch !== undefined)
        this.problem(`${process.owner} holds the lease of ${entry.id} at epoch ${epoch}, yet its core records it owned elsewhere once the world is quiet`);
    }
  }

  /** Once quiet, every conversation the core let go (`ReleaseConversation`)
   * is gone, and none the core would let go is left registered: ready, no
   * use, nothing queued or starting, not pinned, no admission held
   * (docs/decisions/0062, "The idle release and the queue head"). */
  private checkReleased(owner: string, environment: Environment): void {
    const { core } = environment.coordinator.settings;
    const admissions = new Map(core.snapshot().agents.map((agent) => [agent.slot, agent.admissionState]));
    for (const entry of environment.coordinator.agentEntries()) {
      const record = core.conversation(entry.slot);
      const kept = (record.flags & (ConversationFlag.Pinned | ConversationFlag.HeadStarting)) !== 0 || admissions.get(entry.slot) !== 0;
      const idle = record.phase === ConversationPhase.Ready && record.users === 0 && record.queued === 0 && !kept;
      if (record.phase === ConversationPhase.Releasing || idle) {
        this.problem(`${owner}: conversation "${entry.id}" is still registered once the world is quiet (phase ${record.phase}, idle by the core's count)`);
      }
    }
  }

  /** Every caller of a live process settled; none was told AGENT_BUSY
   * ("nothing started") for a message that then ran. */
  private checkCaller(caller: Caller): void {
    const id = caller.executionId;
    if (caller.outcome === "AGENT_BUSY" && caller.key === undefined && id !== undefined && this.ranOrQueued(id)) {
      this.problem(`${caller.label} was refused AGENT_BUSY, yet execution ${id} ${this.cluster.execution(id)?.outcome ?? "is queued"}`);
    }
    if (!caller.process.alive || caller.settlements > 0 || !this.bornHere(caller)) return;
    this.problem(`${caller.label} never settled`);
  }

  private ranOrQueued(executionId: string): boolean {
    return (
      this.cluster.execution(executionId) !== undefined
      || this.cluster.connection.prepare("SELECT 1 FROM queued_messages WHERE execution_id = ?").get(executionId) !== undefined
    );
  }

  /** A caller of the process's current incarnation. */
  private bornHere(caller: Caller): boolean {
    return caller.owner === caller.process.owner;
  }

  /** Everything still waiting, in the world. */
  busy(): boolean {
    // A schedule due, or its firing pending: the sweeps fire it as time runs on.
    return this.busyBesidesSchedules() || this.schedules.busy(Date.now());
  }

  private busyBesidesSchedules(): boolean {
    return (
      this.cluster.pending.length > 0
      || this.models.length > 0
      || this.tools.length > 0
      || this.cluster.unfinished().length > 0
      // A message still queued may be waiting on the runtime's own retry
      // (a conversation held after a store fault is recovered after the
      // core's backoff, its queue restored then): time runs on for it too.
      || this.cluster.connection.prepare("SELECT 1 FROM queued_messages").get() !== undefined
      || startsUnsettled(this.cluster.connection).length > 0
      || this.callers.some((caller) => caller.process.alive && caller.settlements === 0 && this.bornHere(caller))
    );
  }

  // -- the run ----------------------------------------------------------------------------------

  async run(): Promise<void> {
    if (this.modes.startInbox === true) this.note("modes: the start inbox");
    for (const simulated of this.processes) if (this.takesIdle(simulated)) this.note(`modes: ${simulated.name} takes idle conversations here`);
    for (const simulated of this.processes) await this.start(simulated);
    for (this.step = 1; this.step <= this.size.steps; this.step += 1) {
      await this.oneStep();
      this.checkSafety();
    }
    await this.drain();
    for (const [what, count] of Object.entries(this.schedules.counts())) this.drawn[what] = (this.drawn[what] ?? 0) + count;
    for (const [state, count] of Object.entries(filedStartCounts(this.cluster.connection))) this.drawn[`filed start ${state}`] = count;
  }

  private async oneStep(): Promise<void> {
    const choice = this.random();
    const alive = this.alive();
    if (choice < 0.22 && alive.length > 1 && this.processes.some((simulated) => this.takesIdle(simulated)) && this.chance(0.3)) {
      const first = this.pick(alive);
      this.startFresh(first, this.pick(alive.filter((other) => other !== first)));
    } else if (choice < 0.22 && alive.length > 0) this.startRun(this.pick(alive));
    else if (choice < 0.45 && this.cluster.pending.length > 0) this.settleWrite(this.pick(this.cluster.pending), false);
    else if (choice < 0.57 && this.models.length > 0) this.answerModel(Math.floor(this.random() * this.models.length), false);
    else if (choice < 0.66 && this.tools.length > 0) this.finishTool(Math.floor(this.random() * this.tools.length), false);
    else if (choice < 0.72 && alive.length > 0) this.decide(this.pick(alive));
    else if (choice < 0.75 && alive.length > 0) this.signal(this.pick(alive));
    else if (choice < 0.77 && alive.length > 0) this.cancel(this.pick(alive));
    else if (choice < 0.79 && alive.length > 1) this.kill(this.pick(alive));
    else if (choice < 0.8 && alive.length > 1 && this.commitsInFlight().length > 0) this.killDuringCommit();
    else if (choice < 0.83 && alive.length < this.processes.length) await this.start(this.pick(this.processes.filter((process) => !process.alive)));
    else if (choice < 0.85 && alive.length > 0) this.disconnect(this.pick(alive));
    else if (choice < 0.87 && alive.length > 0) this.stall(this.pick(alive));
    else if (choice < 0.88 && alive.length > 0) this.move(this.pick(alive));
    else if (choice < 0.915 && alive.length > 0) this.scheduleStep(this.pick(alive));
    else await this.advance(10 + Math.floor(this.random() * 1_500));
    await settle(1);
  }

  async advance(ms: number): Promise<void> {
    this.note(`clock +${ms} ms`);
    await advanceClock(ms);
  }

  /** Faults stop; the dead restart; each process recovers once; then time
   * runs on with everything answered until the world is quiet. */
  private async drain(): Promise<void> {
    this.faulty = false;
    this.note("drain");
    for (const process of this.processes) {
      process.store.disconnectedUntil = 0;
      process.store.stalledUntil = 0;
      if (!process.alive) await this.start(process);
    }
    await this.advance(leaseMs * 2);
    for (const process of this.processes) {
      process.environment!.recover().catch((error: unknown) => this.note(`  env.recover() at ${process.owner} failed: ${String(error)}`));
    }
    for (let round = 0; round < drainRoundsMax * 2; round += 1) {
      await this.answerEverything();
      this.checkSafety();
      if (!this.busy()) break;
      // Past the rounds for everything else, time runs on for schedules only:
      // a sweep sees a due firing within a minute, plus its retry time (0078).
      if (round >= drainRoundsMax - 1 && this.busyBesidesSchedules()) break;
      await this.advance(leaseMs);
    }
    this.checkQuiet();
  }

  private async answerEverything(): Promise<void> {
    for (let pass = 0; pass < 50; pass += 1) {
      await settle();
      if (this.cluster.pending.length > 0) this.settleWrite(this.cluster.pending[0]!, true);
      else if (this.models.length > 0) this.answerModel(0, true);
      else if (this.tools.length > 0) this.finishTool(0, true);
      else if (!this.decideForDrain()) return;
    }
  }

  /** A decision on each suspended execution, at the process holding it. */
  private decideForDrain(): boolean {
    // Timers and event waits are the clock's (their due sweep), child waits their child's.
    const row = this.cluster
      .unfinished()
      .find(
        (candidate) =>
          candidate.status === "suspended"
          && !this.decidedInDrain.has(candidate.executionId)
          && !["timer", "event", "child"].includes(WaitAnswers.pendingOf(candidate.approvalRequest)?.kind ?? ""),
      );
    if (row === undefined) return false;
    this.decidedInDrain.add(row.executionId);
    const holder = this.cluster.leases.get(row.agentId)?.owner;
    const process = this.alive().find((candidate) => candidate.owner === holder) ?? this.alive()[0]!;
    const answer = this.waits.drainAnswer(WaitAnswers.pendingOf(row.approvalRequest) ?? { approvalId: "none", kind: "approval" });
    this.answer(process, row.executionId, row.agentId, answer);
    return true;
  }

  private readonly decidedInDrain = new Set<string>();
}

const writeFates: readonly WriteFate[] = [...Array<WriteFate>(17).fill("commit"), "failed", "unknown_committed", "unknown_not_committed"];

/** Writes fenced by the agent's lease (PostgreSQL's fence). */
/** Codes no fault of the world explains: `INTERNAL` is a broken promise
 * of the host's own, `CORE_FAILED` a trap of the core (the world injects
 * none), `STREAM_CALLBACK` a listener that threw (it registers none).
 * `INVALID_INPUT` (a valid request refused: the world sends no bad input)
 * belongs here too, and found bugs 18, 19 and 21 with it. */
const bugCodes = new Set(["INTERNAL", "CORE_FAILED", "STREAM_CALLBACK", "INVALID_INPUT"]);
const fencedTypes = new Set(["prepareExecution", "providerBarrier", "toolBarrier", "terminalCommit", "approvalCommit", "reopenExecution", "enqueueMessage"]);

/** Lets every microtask and the loop's drains run (timers are fake). */
export async function settle(rounds = 3): Promise<void> {
  for (let round = 0; round < rounds; round += 1) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Set by the test: moves the fake clock on, running due timers. */
export let advanceClock: (ms: number) => Promise<void> = () => Promise.reject(new Error("the simulated clock is not installed"));

export function installClock(advance: (ms: number) => Promise<void>): void {
  advanceClock = advance;
}
