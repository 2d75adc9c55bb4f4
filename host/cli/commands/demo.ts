// `phronomy demo`: the main job on the embedded store, with no key and no
// network. A support agent (`demo-agent.ts`) looks an order up and asks to
// refund it; the refund needs approval, so the execution suspends durably.
// The environment closes as if the process stopped, a new one opens the
// store (recovery finds the execution still waiting), a support lead
// approves, the refund runs once, the agent answers, and the execution's
// durable timeline is printed.
//
// `--crash`: the same story, but the process that approves is killed
// (SIGKILL) right after the refund's tool barrier is committed — before
// the refund runs. That process is a child (`demo --crash-child`, hidden);
// this one then opens the store, recovery re-dispatches the refund with the
// same idempotency key, and the run completes with exactly one refund.
//
// The child tells the parent what happened in JSON lines on its stdout
// (written synchronously, so they reach the pipe before the kill); its
// narrative and progress go to stderr, which the parent shares.

import { spawn } from "node:child_process";
import { writeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import pc from "../colors.js";
import type {
  Agent,
  ApprovalRequest,
  Environment,
  ExecutionRow,
  ExecutionStore,
  RecoveredExecution,
  Run,
  RunResult,
  StoreOperation,
  StoreResult,
} from "../../index.js";
import type { CliContext } from "../context.js";
import { DEMO_AGENT_ID, DEMO_INPUT, demoAgentDefinition, demoLedgerPath, readRefunds, type RefundRecord } from "../demo-agent.js";
import { CliError, ExitCode, type ExitCodeValue } from "../errors.js";
import { compactJson, printJson } from "../format.js";
import { settle, watchRun, type Outcome } from "../outcome.js";
import { Progress } from "../progress.js";
import { waitUntilSettled } from "../recovered.js";
import { requireDemoPeers } from "../peers.js";
import { openStore, resolveStore, type SqliteLocation } from "../store.js";
import { describeTimeline, renderTimeline } from "../timeline.js";
import { serveDashboard } from "../../ui/index.js";
import { untilStopped } from "./ui.js";

export interface DemoOptions {
  readonly crash?: boolean;
  /** Approve in the dashboard: serve it and wait for a person's click. */
  readonly ui?: boolean;
  /** Internal: this process is the `--crash` demo's child. */
  readonly crashChild?: boolean;
}

/** The reason the support lead gives; shown in the timeline. */
const APPROVAL_REASON = "arrived damaged; photo checked";

/** What the crash child reports on stdout, one JSON object per line. */
type ChildReport =
  | { readonly type: "suspended"; readonly executionId: string; readonly approvalId: string; readonly toolCalls: ApprovalRequest["toolCalls"] }
  | { readonly type: "killing"; readonly executionId: string; readonly revision: number; readonly pid: number };

export async function demoCommand(context: CliContext, options: DemoOptions): Promise<ExitCodeValue> {
  const location = resolveStore(context.options.store, { mustExist: false });
  if (location.kind === "postgres") {
    throw new CliError(
      "STORE_NOT_SUPPORTED",
      `the demo runs on the embedded SQLite store (its refund ledger is a file beside it), not on ${location.path}: give --store a file path, or none`,
    );
  }
  // Before anything is opened: `npx phronomy demo` installs no optional peer.
  await requireDemoPeers();
  if (options.crashChild) return crashChild(context, location);
  const say = (text = "") => context.say(text);
  say(`${pc.bold("Phronomy demo")}: a support agent run durably on the store at ${location.path}`);
  say(pc.dim("The model is scripted (no key, no network). Every model call and tool batch is written to the store before it starts."));
  say();
  if (options.crash) return crashParent(context, location);
  const suspension = await suspendFirstRun(context, location, say);
  const { environment, agent } = await reopen(context, location, suspension.executionId, say);
  if (options.ui) return approveInDashboard(context, environment, location, suspension);
  try {
    say(
      `${step(4)} A support lead approves it (from a shell: phronomy approve ${suspension.executionId}${context.storeArgument()} --reason "${APPROVAL_REASON}").`,
    );
    const result = await approve(context, agent, suspension);
    return await finish(context, environment, location, {
      executionId: suspension.executionId,
      approval: suspension.request,
      result,
      recovery: undefined,
      crashed: false,
    });
  } finally {
    await environment.close();
  }
}

// -- the story ---------------------------------------------------------------------

interface Suspension {
  readonly executionId: string;
  readonly request: ApprovalRequest;
}

/** Steps 1–2: opens the store, starts the run, sees it suspend, closes. */
async function suspendFirstRun(context: CliContext, location: SqliteLocation, say: (text?: string) => void): Promise<Suspension> {
  const environment = await openStore(location, { logger: context.logger });
  try {
    const agent = environment.agent(demoAgentDefinition(location.path));
    await finishLeftovers(context, environment, agent);
    say(`${step(1)} A customer writes: ${pc.italic(JSON.stringify(DEMO_INPUT))}`);
    const outcome = await withProgress(context, (onEvent) => agent.start(DEMO_INPUT, { onEvent }));
    if (outcome.kind !== "suspended") throw unexpected("the run should wait for approval of its refund", outcome);
    const { request } = outcome;
    const refund = request.toolCalls[0];
    say(`${step(2)} The model wants to call ${pc.bold(refund?.toolName ?? "?")}(${compactJson(refund?.input)}), which needs a support lead's approval:`);
    say(
      `   execution ${request.executionId} is ${pc.yellow("suspended")}. The request (approval id ${request.approvalId}) is in the store; nothing waits in memory.`,
    );
    return { executionId: request.executionId, request };
  } finally {
    await environment.close();
  }
}

/** Step 3: a new environment on the store; recovery finds the execution waiting. */
async function reopen(
  context: CliContext,
  location: SqliteLocation,
  executionId: string,
  say: (text?: string) => void,
  wrapStore?: (store: ExecutionStore) => ExecutionStore,
): Promise<{ environment: Environment; agent: Agent }> {
  say(`${step(3)} The environment closes, as if the process stopped, and a new one opens the store.`);
  const environment = await openStore(location, { logger: context.logger, ...(wrapStore ? { wrapStore } : {}) });
  try {
    const agent = environment.agent(demoAgentDefinition(location.path));
    const entry = (await environment.recovery(DEMO_AGENT_ID)).find((item) => item.executionId === executionId);
    if (entry?.status !== "suspended")
      throw new CliError("DEMO_FAILED", `recovery should find execution ${executionId} waiting for approval; it reported ${JSON.stringify(entry ?? null)}`);
    say(`   Recovery reads it back from the store: still waiting for approval.`);
    return { environment, agent };
  } catch (error) {
    await environment.close();
    throw error;
  }
}

async function approve(context: CliContext, agent: Agent, suspension: Suspension): Promise<RunResult> {
  const outcome = await withProgress(context, (onEvent) =>
    agent.resume(suspension.executionId, {
      approvalId: suspension.request.approvalId,
      approved: true,
      reason: APPROVAL_REASON,
      onEvent,
    }),
  );
  if (outcome.kind !== "ended") throw unexpected("the approved run should complete", outcome);
  return outcome.result;
}

interface Finished {
  readonly executionId: string;
  readonly approval: Pick<ApprovalRequest, "approvalId" | "toolCalls">;
  readonly result: RunResult;
  readonly recovery: RecoveredExecution | undefined;
  readonly crashed: boolean;
}

/** The answer, the refund ledger and the timeline. */
async function finish(context: CliContext, environment: Environment, location: SqliteLocation, finished: Finished): Promise<ExitCodeValue> {
  const { executionId, result } = finished;
  const refunds = readRefunds(demoLedgerPath(location.path)).filter((refund) => refund.idempotencyKey.startsWith(`${executionId}:`));
  const timeline = describeTimeline(await environment.timeline(executionId));
  if (context.json) {
    printJson({
      store: location.path,
      agentId: DEMO_AGENT_ID,
      executionId,
      crashed: finished.crashed,
      approval: { approvalId: finished.approval.approvalId, toolCalls: finished.approval.toolCalls, approved: true, reason: APPROVAL_REASON },
      recovery: finished.recovery ?? null,
      outcome: result.outcome,
      output: result.output,
      usage: result.usage,
      refunds,
      timeline: timeline.map((entry) => ({ ...entry, at: new Date(entry.at).toISOString() })),
    });
  }
  const say = (text = "") => context.say(text);
  const last = finished.crashed ? 6 : 5;
  say(`${step(last)} ${pc.green(result.outcome)}: ${pc.italic(JSON.stringify(result.output))}`);
  say(`   Refunds issued for this execution: ${refunds.length}${refundKeys(refunds)}`);
  if (refunds.length !== 1) throw new CliError("DEMO_FAILED", `the execution should have issued exactly one refund, the ledger holds ${refunds.length}`);
  say();
  say(`${pc.bold("Durable timeline")} of execution ${executionId} (phronomy show ${executionId}${context.storeArgument()}):`);
  for (const line of renderTimeline(timeline)) say(line);
  say();
  say(
    pc.dim(
      `Next: phronomy ls${context.storeArgument()} · phronomy show ${executionId}${context.storeArgument()}${finished.crashed ? "" : " · phronomy demo --crash"}`,
    ),
  );
  return ExitCode.ok;
}

function refundKeys(refunds: readonly RefundRecord[]): string {
  return refunds.length === 0 ? "" : ` (${refunds.map((refund) => `${refund.refundId}, idempotency key ${refund.idempotencyKey}`).join("; ")})`;
}

// -- --ui --------------------------------------------------------------------------

/** `--ui`: this process owns the store and serves the dashboard on it; a
 * person approves (or rejects) in the page, the execution runs on here,
 * and the page shows it end. The dashboard stays up until Ctrl-C. */
async function approveInDashboard(context: CliContext, environment: Environment, location: SqliteLocation, suspension: Suspension): Promise<ExitCodeValue> {
  const say = (text = "") => context.say(text);
  try {
    const served = await serveDashboard(environment, { storeLabel: location.path });
    try {
      say(`${step(4)} A support lead decides in the dashboard: open ${pc.bold(served.url)}`);
      say(`   and approve execution ${suspension.executionId} (or reject it, with a reason). Ctrl-C stops the dashboard.`);
      say(pc.dim("   The URL carries the page's access token."));
      const stopped = untilStopped();
      let finished = false;
      void stopped.then(() => {
        finished = true;
      });
      const ended = await untilTerminal(environment, suspension.executionId, () => finished);
      if (ended !== undefined) {
        const timeline = describeTimeline(await environment.timeline(suspension.executionId));
        const outcome = ended.outcome === "completed" ? pc.green(ended.outcome) : pc.red(ended.outcome ?? "ended");
        say(`${step(5)} ${outcome}: ${pc.italic(JSON.stringify(ended.error?.message ?? ended.output))}`);
        say();
        say(`${pc.bold("Durable timeline")} of execution ${suspension.executionId}:`);
        for (const line of renderTimeline(timeline)) say(line);
        say();
        say(pc.dim("The dashboard shows it too. Ctrl-C stops it."));
        await stopped;
      }
    } finally {
      await served.close();
    }
  } finally {
    await environment.close();
  }
  return ExitCode.ok;
}

/** Polls the execution's row until it is terminal (a suspension is not an
 * end: the person may still be deciding); undefined once `stopped`. */
async function untilTerminal(environment: Environment, executionId: string, stopped: () => boolean): Promise<ExecutionRow | undefined> {
  for (;;) {
    if (stopped()) return undefined;
    const row = await environment.execution(executionId);
    if (row?.status === "terminal") return row;
    await sleep(dashboardPollMs);
  }
}

/** How often `demo --ui` looks at the execution while the person decides. */
const dashboardPollMs = 100;

// -- crash ----------------------------------------------------------------------------

/** `--crash`: steps 1–4 in a child that is killed after the refund's
 * barrier, then recovery here. */
async function crashParent(context: CliContext, location: SqliteLocation): Promise<ExitCodeValue> {
  const say = (text = "") => context.say(text);
  say(pc.dim("With --crash, the process that approves is killed (SIGKILL) right after the refund's tool barrier is committed."));
  const child = await runChild(location);
  const killing = child.reports.find((report) => report.type === "killing");
  const suspended = child.reports.find((report) => report.type === "suspended");
  if (child.signal !== "SIGKILL" || killing === undefined || suspended?.type !== "suspended") {
    throw new CliError(
      "DEMO_FAILED",
      `the demo's child process should have been killed after the refund's barrier; it exited with ${child.signal ?? `code ${String(child.code)}`} (reports: ${JSON.stringify(child.reports)})`,
    );
  }
  const executionId = killing.executionId;
  say(
    `${pc.red("✖")} Process ${killing.pid} was killed by SIGKILL right after the refund's tool barrier (revision ${killing.revision}) was committed: the refund had not run, nothing recorded it.`,
  );
  say(`${step(5)} A new process opens the store. Recovery reads what execution ${executionId} left behind:`);
  const environment = await openStore(location, { logger: context.logger });
  try {
    environment.agent(demoAgentDefinition(location.path));
    const recovery = (await environment.recovery(DEMO_AGENT_ID)).find((item) => item.executionId === executionId);
    if (recovery?.status !== "continued")
      throw new CliError("DEMO_FAILED", `recovery should continue execution ${executionId}; it reported ${JSON.stringify(recovery ?? null)}`);
    say(
      `   phase ${recovery.phase} → ${recovery.continuation ?? "?"}: the recorded refund batch is dispatched again, with the same call id and idempotency key.`,
    );
    const result = await environment.wait(executionId).result;
    return await finish(context, environment, location, { executionId, approval: suspended, result, recovery, crashed: true });
  } finally {
    await environment.close();
  }
}

interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly reports: ChildReport[];
}

/** Runs `phronomy demo --crash-child` with this process's runtime and launcher. */
function runChild(location: SqliteLocation): Promise<ChildExit> {
  const launcher = process.argv[1];
  if (launcher === undefined)
    throw new CliError("DEMO_FAILED", "cannot tell how this process was started (process.argv[1] is missing), so the crash child cannot be launched");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, launcher, "demo", "--crash-child", "--store", location.path], {
      stdio: ["ignore", "pipe", "inherit"],
      env: process.env,
    });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      const reports = stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as ChildReport);
      resolve({ code, signal, reports });
    });
  });
}

/** The child: steps 1–4, killed at the refund's barrier. */
async function crashChild(context: CliContext, location: SqliteLocation): Promise<ExitCodeValue> {
  const say = (text = "") => process.stderr.write(`${text}\n`);
  const suspension = await suspendFirstRun(context, location, say);
  report({ type: "suspended", executionId: suspension.executionId, approvalId: suspension.request.approvalId, toolCalls: suspension.request.toolCalls });
  const { environment, agent } = await reopen(context, location, suspension.executionId, say, killAfterRefundBarrier);
  try {
    say(`${step(4)} A support lead approves it; the refund's tool barrier is committed, and then this process is killed.`);
    await approve(context, agent, suspension);
  } finally {
    await environment.close();
  }
  throw new CliError("DEMO_FAILED", "the crash child should have been killed at the refund's barrier, but the run completed");
}

function report(line: ChildReport): void {
  writeSync(1, `${JSON.stringify(line)}\n`);
}

/** The store, except that the process kills itself once a tool barrier
 * naming the refund is durable — before the runtime hears of it. */
function killAfterRefundBarrier(store: ExecutionStore): ExecutionStore {
  return {
    get path() {
      return store.path;
    },
    run<O extends StoreOperation>(operation: O): Promise<StoreResult<O>> {
      const committed = store.run(operation);
      if (operation.type !== "toolBarrier" || !operation.toolBatch.some((call) => call.toolName === "issueRefund")) return committed;
      return committed.then((result) => {
        const revision = (result as { revision: number }).revision;
        report({ type: "killing", executionId: operation.executionId, revision, pid: process.pid });
        writeSync(2, `${pc.red("   ✖ the refund's tool barrier is durable: killing this process now (SIGKILL)")}\n`);
        process.kill(process.pid, "SIGKILL");
        return result;
      });
    },
    ensureAgent: (agentId, at) => store.ensureAgent(agentId, at),
    closeAgent: (agentId, at) => store.closeAgent(agentId, at),
    purgeAgent: (agentId) => store.purgeAgent(agentId),
    getAgent: (agentId) => store.getAgent(agentId),
    getExecution: (executionId) => store.getExecution(executionId),
    listExecutions: (filter) => store.listExecutions(filter),
    listSteps: (executionId) => store.listSteps(executionId),
    readJournal: (agentId, limit) => store.readJournal(agentId, limit),
    unfinishedExecutions: () => store.unfinishedExecutions(),
    close: () => store.close(),
  };
}

// -- helpers --------------------------------------------------------------------------

/** Earlier demo runs the store still holds unfinished (an interrupted
 * demo): recovery continues them; one waiting for approval is approved,
 * as the demo always does, so the agent is free for the new run. */
async function finishLeftovers(context: CliContext, environment: Environment, agent: Agent): Promise<void> {
  for (const item of await environment.recovery(DEMO_AGENT_ID)) {
    if (item.status === "needs_attention") {
      throw new CliError(
        "DEMO_FAILED",
        `an earlier demo run, execution ${item.executionId}, needs attention (${item.reason ?? item.phase}); see \`phronomy show ${item.executionId}\`, or run the demo on a fresh --store`,
      );
    }
    const row = item.status === "continued" ? await waitUntilSettled(environment, item.executionId) : await environment.execution(item.executionId);
    if (row?.status !== "suspended") continue;
    context.logger.line(pc.dim(`an earlier demo run left execution ${item.executionId} waiting for approval: approving it first`));
    const pending = (await environment.pendingApprovals()).find((approval) => approval.executionId === item.executionId);
    if (!pending) continue;
    agent.resume(item.executionId, { approvalId: pending.request.approvalId, approved: true, reason: "approved by a later demo run" });
    await waitUntilSettled(environment, item.executionId);
  }
}

async function withProgress(context: CliContext, begin: (onEvent: ReturnType<typeof watchRun>["onEvent"]) => Run): Promise<Outcome> {
  const progress = new Progress();
  context.logger.progress = progress;
  try {
    const watch = watchRun(progress);
    return await settle(begin(watch.onEvent), watch);
  } finally {
    progress.stop();
    context.logger.progress = undefined;
  }
}

function unexpected(expectation: string, outcome: Outcome): CliError {
  const what =
    outcome.kind === "failed"
      ? `it failed: ${outcome.error instanceof Error ? outcome.error.message : String(outcome.error)}`
      : `it ${outcome.kind === "ended" ? outcome.result.outcome : "suspended"}`;
  return new CliError("DEMO_FAILED", `${expectation}, but ${what}`, ExitCode.failure, { cause: outcome.kind === "failed" ? outcome.error : undefined });
}

function step(number: number): string {
  return pc.bold(pc.cyan(`${number}.`));
}
