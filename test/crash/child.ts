// The crash child: `node --import tsx test/crash/child.ts <json-config>`
// (see `ChildConfig` in fixture.ts). It opens the store, defines the
// support agent(s), starts its runs (or decides a pending approval), prints
// one JSON line per admitted execution on stdout, and kills itself with
// SIGKILL at the configured point:
//
//   before:<operation>#<n>  before the n-th operation of that type reaches
//                           the real store (nothing of it was written)
//   after:<operation>#<n>   once the real store's promise resolved (the
//                           barrier is durable, nothing after it happened)
//   tool:#<n>               inside the n-th tool call, after its side effect,
//                           before it returns
//   point:#<n>              the n-th of all the points above, in the order
//                           reached
//   inflight:#<n>           the first point from the n-th on at which the
//                           store surely holds an unfinished execution (see
//                           KillSwitch.inFlight): a kill that hits nothing
//                           proves nothing
//
// Lines are written with writeSync, so everything printed before the kill
// reached the pipe.

import { writeSync } from "node:fs";
import { Phronomy, type Agent, type Environment, type ExecutionEvent } from "../../host/index.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { agentIdOf, crashModel, idempotentLookup, inputOf, type ChildConfig, type ChildLine } from "./fixture.js";

const config = JSON.parse(process.argv[2] ?? "{}") as ChildConfig;

function print(line: ChildLine): void {
  writeSync(1, `${JSON.stringify(line)}\n`);
}

function die(): never {
  process.kill(process.pid, "SIGKILL");
  // SIGKILL to oneself is delivered before kill(2) returns; should this
  // thread still run, it must not do anything more.
  for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000);
}

/** Counts kill points and dies at the configured one. */
class KillSwitch {
  private readonly counts = new Map<string, number>();
  points = 0;
  /** Preparations known committed (counted once their promise resolved)
   * less terminal commits submitted (counted before they reach the store):
   * never more than the unfinished executions the store holds, since a
   * group commit may have written more preparations, and fewer terminals,
   * than counted yet. Between two waves of runs (every run of the wave
   * ended, the next not yet prepared) it is 0, and so may the store's be. */
  inFlight = 0;
  private readonly inFlightFrom: number | undefined;

  constructor(private readonly spec: string | undefined) {
    const match = /^inflight:#(\d+)$/.exec(spec ?? "");
    this.inFlightFrom = match ? Number(match[1]) : undefined;
  }

  reach(label: string): void {
    const occurrence = (this.counts.get(label) ?? 0) + 1;
    this.counts.set(label, occurrence);
    this.points += 1;
    const point = `${label}#${occurrence}`;
    if (config.trace) print({ type: "point", point, index: this.points, inFlight: this.inFlight });
    const inFlightKill = this.inFlightFrom !== undefined && this.points >= this.inFlightFrom && this.inFlight > 0;
    if (point === this.spec || `point:#${this.points}` === this.spec || inFlightKill) {
      print({ type: "killing", point, index: this.points });
      die();
    }
  }
}

const kills = new KillSwitch(config.kill);

/** The real SQLite store, with kill points around every operation. */
function killingStore(store: SqliteStore): ExecutionStore {
  const run = <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
    if (operation.type === "terminalCommit" && operation.outcome !== "suspended") kills.inFlight -= 1;
    kills.reach(`before:${operation.type}`);
    return store.run(operation).then((result) => {
      if (operation.type === "prepareExecution" && (result as { outcome?: string }).outcome === "active") kills.inFlight += 1;
      kills.reach(`after:${operation.type}`);
      return result;
    });
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "run") return run;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
}

function codeOf(error: unknown): string {
  return typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : "UNKNOWN";
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** An execution suspended for approval (its suspension is durable: the
 * event follows the terminal commit). */
function reportSuspension(event: ExecutionEvent): void {
  if (event.type === "approval_required") print({ type: "suspended", executionId: event.executionId, approvalId: event.request.approvalId });
}

function defineAgents(environment: Environment, count: number): Agent[] {
  const toolTurns = config.toolTurns ?? 2;
  const settings = {
    model: crashModel(toolTurns),
    instructions: "You help customers with their orders.",
    tools: {
      lookup: idempotentLookup(config.files, { needsApproval: config.approval ?? false, afterEffect: () => kills.reach("tool:") }),
    },
  };
  if (config.conversations === true) {
    const support = environment.agent({ name: "support", ...settings });
    return Array.from({ length: count }, (_, index) => support.conversation(agentIdOf(index, count)));
  }
  return Array.from({ length: count }, (_, index) => environment.agent({ id: agentIdOf(index, count), ...settings }));
}

async function startRuns(environment: Environment): Promise<void> {
  const count = config.agents ?? 1;
  const runs = config.runsPerAgent ?? 1;
  const agents = defineAgents(environment, count);
  await Promise.all(
    agents.map(async (agent, index) => {
      for (let run = 0; run < runs; run += 1) {
        const started = agent.start(inputOf(index, count, run, runs), { onEvent: reportSuspension });
        let executionId: string | null = null;
        try {
          executionId = await started.executionId;
          print({ type: "admitted", executionId, agentId: agent.id });
          const result = await started.result;
          print({ type: "settled", executionId, outcome: result.outcome, output: result.output });
        } catch (error) {
          print({ type: "failed", executionId, code: codeOf(error), message: messageOf(error) });
        }
      }
    }),
  );
}

async function resumeApproval(environment: Environment): Promise<void> {
  const decision = config.resume;
  if (!decision) throw new Error("mode resume needs config.resume");
  const [agent] = defineAgents(environment, 1);
  if (!agent) throw new Error("no agent");
  print({ type: "recovered", report: await environment.recovery(agent.id) });
  const pending = (await environment.pendingApprovals()).find((approval) => approval.executionId === decision.executionId);
  if (!pending) throw new Error(`no pending approval for execution ${decision.executionId}`);
  const resumed = agent.resume(decision.executionId, {
    approvalId: pending.request.approvalId,
    approved: decision.approved,
    onEvent: reportSuspension,
    ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
  });
  try {
    const result = await resumed.result;
    print({ type: "settled", executionId: decision.executionId, outcome: result.outcome, output: result.output });
  } catch (error) {
    print({ type: "failed", executionId: decision.executionId, code: codeOf(error), message: messageOf(error) });
  }
}

async function recoverRuns(environment: Environment): Promise<void> {
  const agents = defineAgents(environment, config.agents ?? 1);
  const report = (await Promise.all(agents.map((agent) => environment.recovery(agent.id)))).flat();
  print({ type: "recovered", report });
  await Promise.all(
    report
      .filter((item) => item.status === "continued")
      .map(async ({ executionId }) => {
        try {
          const result = await environment.wait(executionId).result;
          print({ type: "settled", executionId, outcome: result.outcome, output: result.output });
        } catch (error) {
          print({ type: "failed", executionId, code: codeOf(error), message: messageOf(error) });
        }
      }),
  );
}

async function retryExecution(environment: Environment): Promise<void> {
  const executionId = config.retry?.executionId;
  if (!executionId) throw new Error("mode retry needs config.retry");
  defineAgents(environment, 1);
  try {
    const result = await environment.retry(executionId).result;
    print({ type: "settled", executionId, outcome: result.outcome, output: result.output });
  } catch (error) {
    print({ type: "failed", executionId, code: codeOf(error), message: messageOf(error) });
  }
}

async function main(): Promise<void> {
  const store = await SqliteStore.open(config.store, config.synchronous ? { synchronous: config.synchronous } : {});
  const environment = await Phronomy.open({
    store: killingStore(store),
    logger: { warn: (message) => writeSync(2, `${message}\n`) },
  });
  if (config.mode === "resume") await resumeApproval(environment);
  else if (config.mode === "recover") await recoverRuns(environment);
  else if (config.mode === "retry") await retryExecution(environment);
  else await startRuns(environment);
  print({ type: "done", points: kills.points });
  await environment.close();
}

// Like an application's server: the process lives until main ends or it is
// killed, even while its only execution waits for an approval (nothing in
// the event loop would keep it alive then).
setInterval(() => undefined, 1 << 30);

main().then(
  () => process.exit(0),
  (error: unknown) => {
    writeSync(2, `crash child failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(3);
  },
);
