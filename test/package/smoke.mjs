// The package smoke: what an application does with the published package,
// run on Node, Deno and Bun from a project that installed the packed
// tarball (test/package/runtimes.test.ts drives it). Plain JavaScript, no
// build step, nothing but the package's public entries ("phronomy",
// "phronomy/testing") and `node:` built-ins, which all three runtimes have.
//
//   <runtime> smoke.mjs <phase> <store path>
//
// The phases of one store may each run on a different runtime: that is how
// a store written by one runtime is shown to open under another.
//
//   run      a fresh store: an agent run (model → tool → model) to
//            completion, and a second agent's run suspended for approval
//   crash    a third agent's tool starts behind its durable barrier, and
//            the process dies inside the tool (exit 75, no close)
//   resume   reopen: recovery re-dispatches the crashed tool batch with the
//            same idempotency key and completes it; the approval is
//            granted and its run completes; one more run; close
//   verify   reopen: every execution completed, nothing pending, timelines
//            whole; close; reopen once more
//   hold     open the store and keep it until standard input ends
//   owned    open must fail at once: another process owns the store
//   visit    a fresh store, an owner and a visitor in this one process (the
//            ownership lock is per connection): the owner suspends a run
//            for approval; the visitor reads it, is refused a write, files
//            the approval with `agent.resume` and gets the outcome once
//            the owner applied it
//   serve    a fresh store: an owner suspends a run for approval, then
//            keeps the store until standard input ends, applying what
//            visitors file; at the end the refund must have run once, here
//   approve  a visitor beside the live owner of `serve` (another process,
//            perhaps another runtime): reads, files the approval, gets
//            the outcome; no tool runs in this process
//
// Each phase ends by printing one line `SMOKE <json>` with what it saw;
// anything unexpected throws (a non-zero exit).

import { appendFileSync, existsSync, readFileSync } from "node:fs";
import process from "node:process";
import { Phronomy, StoreError, tool } from "phronomy";
import { scriptedModel, sqliteDriverName } from "phronomy/testing";

const [phase, store] = process.argv.slice(2);
if (phase === undefined || store === undefined) throw new Error("usage: smoke.mjs <phase> <store path>");

/** The exit code of the `crash` phase: the process died inside a tool. */
const crashExitCode = 75;

function check(condition, message) {
  if (!condition) throw new Error(`smoke (${phase} on ${sqliteDriverName()}): ${message}`);
}

function report(facts) {
  console.log(`SMOKE ${JSON.stringify({ phase, driver: sqliteDriverName(), ...facts })}`);
}

/** A Standard Schema (v1) for a flat object of string and number fields,
 * written out by hand so that the smoke needs no schema library. */
function objectSchema(fields) {
  return {
    "~standard": {
      version: 1,
      vendor: "phronomy-smoke",
      validate(value) {
        if (typeof value !== "object" || value === null) return { issues: [{ message: "expected an object" }] };
        for (const [name, type] of Object.entries(fields)) {
          if (typeof value[name] !== type) return { issues: [{ message: `${name} must be a ${type}`, path: [name] }] };
        }
        return { value };
      },
    },
  };
}

const orderInput = objectSchema({ orderId: "string" });
const jsonSchemaOfOrder = { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] };

/** Calls of the `ship` tool, one idempotency key a line, across processes. */
const shipCallsPath = `${store}.ship-calls`;

function shipCalls() {
  return existsSync(shipCallsPath)
    ? readFileSync(shipCallsPath, "utf8")
        .split("\n")
        .filter((line) => line !== "")
    : [];
}

/** Idempotency keys of the `refund` tool's calls in this process. */
const refunds = [];

/** The three agents of the workload. Defining them runs their recovery.
 * `refundCalls` collects the refund tool's calls (a visitor's agents get a
 * list of their own, so that a refund run by them would show). */
function defineAgents(env, { crashInShip, refundCalls = refunds }) {
  // Calls a tool on the first turn after the user's message, then answers
  // with what the tool said: the same decision for every conversation.
  const oneToolModel = (toolName, answer) =>
    scriptedModel(({ messages }) => {
      const lastUser = messages.map((message) => message.role).lastIndexOf("user");
      const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
      if (turn === 0) return { toolCalls: [{ toolName, input: { orderId: "42" } }] };
      return { text: answer };
    });
  const support = env.agent({
    id: "support",
    model: oneToolModel("lookupOrder", "Order 42 is a blue kettle, out for delivery."),
    instructions: "You help customers with their orders.",
    tools: {
      lookupOrder: tool({
        description: "Looks an order up",
        inputSchema: orderInput,
        jsonSchema: jsonSchemaOfOrder,
        execute: ({ orderId }) => ({ orderId, item: "a blue kettle", status: "out for delivery" }),
      }),
    },
  });
  const refundsAgent = env.agent({
    id: "refunds",
    model: oneToolModel("refund", "Your refund is on its way."),
    tools: {
      refund: tool({
        description: "Refunds an order",
        inputSchema: orderInput,
        jsonSchema: jsonSchemaOfOrder,
        needsApproval: true,
        execute: ({ orderId }, { idempotencyKey }) => {
          refundCalls.push(idempotencyKey);
          return { refunded: orderId };
        },
      }),
    },
  });
  const shipping = env.agent({
    id: "shipping",
    model: oneToolModel("ship", "Shipped."),
    tools: {
      ship: tool({
        description: "Hands a parcel to the carrier",
        inputSchema: orderInput,
        jsonSchema: jsonSchemaOfOrder,
        execute: ({ orderId }, { idempotencyKey }) => {
          appendFileSync(shipCallsPath, `${idempotencyKey}\n`);
          if (crashInShip) process.exit(crashExitCode);
          return { shipped: orderId };
        },
      }),
    },
  });
  return { support, refunds: refundsAgent, shipping };
}

async function waitFor(probe, what, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    check(Date.now() < until, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function phaseRun() {
  check(!existsSync(store), `${store} must not exist yet`);
  const started = performance.now();
  // What the store says at debug level as it opens: the SQLite library it runs on.
  const said = [];
  const env = await Phronomy.open({ store, logger: { warn: (message) => console.warn(message), debug: (message) => said.push(message) } });
  const openMs = performance.now() - started;
  const storeSaid = said.find((message) => message.includes("runs on"));
  check(storeSaid?.endsWith(`runs on ${sqliteDriverName()}`), `the store did not say which SQLite it runs on: ${JSON.stringify(said)}`);
  const agents = defineAgents(env, { crashInShip: false });

  const events = [];
  const run = agents.support.start("Where is order 42?");
  for await (const event of run.events) events.push(event.type);
  const result = await run.result;
  check(result.outcome === "completed", `support run ended ${result.outcome}`);
  check(result.output === "Order 42 is a blue kettle, out for delivery.", `support output ${JSON.stringify(result.output)}`);
  for (const type of ["model_call_started", "tool_call_started", "tool_call_finished", "model_call_finished", "done"]) {
    check(events.includes(type), `no ${type} event (saw ${events.join(", ")})`);
  }
  const timeline = (await env.timeline(result.executionId)).map((step) => step.kind);

  const suspended = await suspendRefund(env, agents); // decided by another process
  check(refunds.length === 0, "the refund ran before its approval");
  await env.close();
  report({ openMs, storeSaid, supportExecution: result.executionId, timeline, refundExecution: suspended.executionId, approvalId: suspended.approvalId });
}

async function phaseCrash() {
  const env = await Phronomy.open({ store });
  const agents = defineAgents(env, { crashInShip: true });
  const run = agents.shipping.start("Ship order 42");
  run.result.catch(() => {});
  const executionId = await run.executionId;
  console.log(`SMOKE ${JSON.stringify({ phase, driver: sqliteDriverName(), shipExecution: executionId })}`);
  await run.result.catch(() => {});
  throw new Error("the ship tool did not end the process");
}

async function phaseResume() {
  const env = await Phronomy.open({ store });
  const agents = defineAgents(env, { crashInShip: false });
  const [shipRecovery, refundRecovery] = await Promise.all([env.recovery("shipping"), env.recovery("refunds")]);
  check(shipRecovery.length === 1 && shipRecovery[0].status === "continued", `shipping recovery ${JSON.stringify(shipRecovery)}`);
  check(refundRecovery.length === 1 && refundRecovery[0].status === "suspended", `refunds recovery ${JSON.stringify(refundRecovery)}`);
  const shipExecution = shipRecovery[0].executionId;
  const shipped = await env.wait(shipExecution).result;
  check(shipped.outcome === "completed" && shipped.output === "Shipped.", `recovered ship run ${JSON.stringify(shipped)}`);
  const keys = shipCalls();
  check(keys.length === 2 && keys[0] === keys[1], `the ship tool must be called again with the same idempotency key: ${JSON.stringify(keys)}`);

  const [pending] = await env.pendingApprovals();
  check(pending !== undefined && pending.agentId === "refunds", `pending approvals ${JSON.stringify(pending)}`);
  const approved = await agents.refunds.resume(pending.executionId, { approvalId: pending.request.approvalId, approved: true }).result;
  check(approved.outcome === "completed" && approved.output === "Your refund is on its way.", `approved run ${JSON.stringify(approved)}`);
  check(refunds.length === 1 && refunds[0] === `${pending.executionId}:${pending.request.toolCalls[0].callId}`, `refund calls ${JSON.stringify(refunds)}`);

  const again = await agents.support.start("And now?").result;
  check(again.outcome === "completed", `a new support run ended ${again.outcome}`);
  await env.close();
  report({ shipExecution, shipContinuation: shipRecovery[0].continuation, idempotencyKey: keys[0], refundExecution: pending.executionId });
}

async function phaseVerify() {
  const facts = await verifyOnce();
  await verifyOnce(); // a second reopen finds the same
  report(facts);
}

async function verifyOnce() {
  const env = await Phronomy.open({ store });
  defineAgents(env, { crashInShip: false });
  check((await env.recover()).length === 0, "something was left to recover");
  check((await env.pendingApprovals()).length === 0, "an approval is still pending");
  const rows = await env.executions();
  const byAgent = {};
  for (const row of rows) {
    check(row.status === "terminal" && row.outcome === "completed", `execution ${row.executionId} is ${row.status}/${row.outcome}`);
    const kinds = (await env.timeline(row.executionId)).map((step) => step.kind);
    check(kinds[0] === "input" && kinds.at(-1) === "terminal", `timeline of ${row.executionId}: ${kinds.join(", ")}`);
    byAgent[row.agentId] = (byAgent[row.agentId] ?? 0) + 1;
  }
  check(byAgent.support === 2 && byAgent.refunds === 1 && byAgent.shipping === 1, `executions by agent ${JSON.stringify(byAgent)}`);
  await env.close();
  return { executions: rows.length, byAgent };
}

async function phaseHold() {
  const env = await Phronomy.open({ store });
  report({ holding: true, pid: process.pid });
  for await (const chunk of process.stdin) void chunk; // until the driver closes our standard input
  await env.close();
}

async function phaseOwned() {
  const started = performance.now();
  try {
    const env = await Phronomy.open({ store });
    await env.close();
  } catch (error) {
    check(error instanceof StoreError && error.details?.reason === "store_owned", `open failed otherwise: ${error}`);
    report({ refusedMs: performance.now() - started, owner: error.details.owner });
    return;
  }
  check(false, "open succeeded while another process owns the store");
}

/** Starts a refund and waits until it is suspended for approval. */
async function suspendRefund(env, agents) {
  const suspended = agents.refunds.start("Refund order 42");
  suspended.result.catch(() => {}); // settled once a decision is applied here, or left pending
  const executionId = await suspended.executionId;
  const pending = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId), "the approval request");
  return { executionId, approvalId: pending.request.approvalId };
}

/** What a visitor environment does beside a live owner of a store with
 * one execution, suspended for approval: it lists the execution and the
 * pending approval, is refused a write through its store, files the
 * approval with `agent.resume` and waits for the outcome, which the owner
 * produces (the refund tool never runs in the visitor). */
async function visitAndApprove() {
  const openStarted = performance.now();
  const visitor = await Phronomy.open({ store, visitor: true });
  const visitorOpenMs = performance.now() - openStarted;
  try {
    check(visitor.visitor === true, "the environment is not a visitor's");
    const rows = await visitor.executions();
    check(
      rows.length === 1 && rows[0].agentId === "refunds" && rows[0].status === "suspended",
      `the visitor lists ${JSON.stringify(rows.map((row) => [row.executionId, row.status]))}`,
    );
    const pending = await visitor.pendingApprovals();
    check(pending.length === 1 && pending[0].executionId === rows[0].executionId, `the visitor's pending approvals ${JSON.stringify(pending)}`);
    const {
      executionId,
      request: { approvalId },
    } = pending[0];
    const write = await visitor.store.ensureAgent("refunds", Date.now()).then(
      () => undefined,
      (error) => error,
    );
    check(write instanceof StoreError && write.details?.reason === "visitor", `a write through the visitor's store was not refused as a visitor's: ${write}`);

    const visitorRefunds = [];
    const agents = defineAgents(visitor, { crashInShip: false, refundCalls: visitorRefunds });
    const resumeStarted = performance.now();
    const run = agents.refunds.resume(executionId, { approvalId, approved: true });
    check((await run.executionId) === executionId, "the visitor's run names another execution");
    const result = await run.result;
    const resumeMs = performance.now() - resumeStarted;
    check(result.outcome === "completed" && result.output === "Your refund is on its way.", `the visitor's run ${JSON.stringify(result)}`);
    check(visitorRefunds.length === 0, `the refund ran in the visitor: ${JSON.stringify(visitorRefunds)}`);
    check((await visitor.execution(executionId))?.outcome === "completed", "the visitor does not read the completed execution");
    check((await visitor.pendingApprovals()).length === 0, "an approval is still pending");
    return { refundExecution: executionId, approvalId, visitorOpenMs, resumeMs };
  } finally {
    await visitor.close();
  }
}

/** Checks, in the owner, that the visitor's approval was applied here. */
async function checkApplied(env, executionId) {
  const row = await env.execution(executionId);
  check(row?.status === "terminal" && row.outcome === "completed", `the refund execution is ${row?.status}/${row?.outcome}`);
  check(refunds.length === 1 && refunds[0].startsWith(`${executionId}:`), `refund calls in the owner ${JSON.stringify(refunds)}`);
}

async function phaseVisit() {
  check(!existsSync(store), `${store} must not exist yet`);
  const owner = await Phronomy.open({ store });
  try {
    const suspended = await suspendRefund(owner, defineAgents(owner, { crashInShip: false }));
    const seen = await visitAndApprove();
    check(seen.refundExecution === suspended.executionId && seen.approvalId === suspended.approvalId, `the visitor approved ${JSON.stringify(seen)}`);
    await checkApplied(owner, suspended.executionId);
    report(seen);
  } finally {
    await owner.close();
  }
}

async function phaseServe() {
  check(!existsSync(store), `${store} must not exist yet`);
  const owner = await Phronomy.open({ store });
  const suspended = await suspendRefund(owner, defineAgents(owner, { crashInShip: false }));
  report({ pid: process.pid, refundExecution: suspended.executionId, approvalId: suspended.approvalId });
  for await (const chunk of process.stdin) void chunk; // until the driver closes our standard input
  await checkApplied(owner, suspended.executionId);
  await owner.close();
}

async function phaseApprove() {
  const seen = await visitAndApprove();
  check(refunds.length === 0, `the refund ran in the visitor's process: ${JSON.stringify(refunds)}`);
  report(seen);
}

const phases = {
  run: phaseRun,
  crash: phaseCrash,
  resume: phaseResume,
  verify: phaseVerify,
  hold: phaseHold,
  owned: phaseOwned,
  visit: phaseVisit,
  serve: phaseServe,
  approve: phaseApprove,
};
check(phase in phases, `unknown phase ${phase}`);
await phases[phase]();
