// Restate (@restatedev/restate-sdk) against its single-node server
// (@restatedev/restate-server, started by bench/peers/run.ts in a temporary
// directory on free ports): a child of run.ts that is the application — the
// SDK's endpoint, which the server calls, and the client that calls the
// server's ingress. `node restate.js <role>`; the server's addresses and
// the endpoint's port come in RESTATE_BENCH_* variables.
//
// A run is a workflow (its key the conversation) of five `ctx.run` steps:
// model, tool, model, tool, model, each journaled by the server before the
// next starts. The approval run is model → `ctx.promise("approval")` →
// refund → model; the bench approves through the workflow's shared handler
// `approve`, which resolves the promise, then attaches to the workflow's
// result. After a kill -9 of the endpoint, the server retries the
// invocations it had in flight (its default retry policy) once an endpoint
// listens on the same address again (docs/decisions/0069).

import "./with-resolvers.js";
import * as restate from "@restatedev/restate-sdk";
import { readFileSync } from "node:fs";
import {
  agentRunModel,
  CRASH_IN_FLIGHT,
  callModel,
  type FakeModel,
  lookup,
  type Message,
  measureApprovals,
  measureLoops,
  measureRestart,
  never,
  pool,
  question,
  refund,
  refundModel,
  refundRequest,
  report,
  toolResult,
} from "./workload.js";

const ingress = process.env.RESTATE_BENCH_INGRESS!;
const admin = process.env.RESTATE_BENCH_ADMIN!;
const endpointPort = Number(process.env.RESTATE_BENCH_ENDPOINT_PORT);
const serverPid = Number(process.env.RESTATE_BENCH_SERVER_PID);

type Tools = Record<string, (input: Record<string, unknown>) => unknown>;
let tools: Tools = { lookup, refund };
/** Told when an approval workflow is about to await its promise. */
const suspending = new Map<string, () => void>();

async function conversation(ctx: restate.WorkflowContext, model: FakeModel, first: Message, approval: boolean): Promise<string> {
  const messages: Message[] = [first];
  for (;;) {
    const answer = await ctx.run("model", () => callModel(model, messages));
    messages.push(answer);
    if (answer.toolCalls === undefined) return answer.text ?? "";
    if (approval) {
      suspending.get(ctx.key)?.();
      if ((await ctx.promise<boolean>("approval")) !== true) throw new restate.TerminalError("the bench approves every refund");
    }
    for (const call of answer.toolCalls) {
      const output = await ctx.run(call.toolName, async () => (await tools[call.toolName]!(call.input)) as Record<string, unknown> | string);
      messages.push(toolResult(call, output));
    }
  }
}

const agentRun = restate.workflow({
  name: "AgentRun",
  handlers: { run: (ctx: restate.WorkflowContext) => conversation(ctx, agentRunModel, question(), false) },
});

const refundRun = restate.workflow({
  name: "RefundRun",
  handlers: {
    run: (ctx: restate.WorkflowContext) => conversation(ctx, refundModel, refundRequest(), true),
    approve: async (ctx: restate.WorkflowSharedContext, approved: boolean) => {
      await ctx.promise<boolean>("approval").resolve(approved);
    },
  },
});

async function call(url: string, body?: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`Restate ${url}: ${response.status} ${text}`);
  return text === "" ? undefined : JSON.parse(text);
}

/** Serves the endpoint; registers it with the server unless it is known. */
async function serve(register: boolean): Promise<void> {
  await restate.serve({ services: [agentRun, refundRun], port: endpointPort, logger: () => undefined });
  if (register) await call(`${admin}/deployments`, { uri: `http://127.0.0.1:${endpointPort}`, force: true });
}

async function run(key: string): Promise<void> {
  if ((await call(`${ingress}/AgentRun/${key}/run`, null)) !== "Order 42 has shipped.") throw new Error(`Restate workflow ${key} did not answer`);
}

/** The server's resident set, MB (Linux). */
function serverRssMb(): number {
  const line = readFileSync(`/proc/${serverPid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/);
  return Number(line?.[1]) / 1024;
}

async function main(): Promise<void> {
  const role = process.argv[2];
  if (role === "loops") {
    await serve(true);
    report(await measureLoops(run));
  } else if (role === "approvals") {
    await serve(true);
    const suspend = async (key: string) => {
      const waiting = new Promise<void>((resolve) => suspending.set(key, resolve));
      await call(`${ingress}/RefundRun/${key}/run/send`, null);
      await waiting;
      suspending.delete(key);
    };
    const resume = async (key: string) => {
      await call(`${ingress}/RefundRun/${key}/approve`, true);
      if ((await call(`${ingress}/restate/workflow/RefundRun/${key}/attach`)) !== "refunded") throw new Error(`Restate workflow ${key} did not end`);
    };
    report(await measureApprovals(suspend, resume, serverRssMb));
  } else if (role === "crash") {
    let inTool = 0;
    tools = {
      lookup: () => {
        if (++inTool === CRASH_IN_FLIGHT) console.log("in-flight");
        return never;
      },
    };
    await serve(true);
    for (let index = 0; index < CRASH_IN_FLIGHT; index += 1) await call(`${ingress}/AgentRun/crashed-${index}/run/send`, null);
  } else if (role === "restart") {
    const began = performance.now();
    await serve(false); // the server knows this endpoint: it retries what it had in flight here
    const recover = () =>
      pool(CRASH_IN_FLIGHT, CRASH_IN_FLIGHT, async (index) => {
        if ((await call(`${ingress}/restate/workflow/AgentRun/crashed-${index}/attach`)) !== "Order 42 has shipped.")
          throw new Error(`Restate workflow crashed-${index} was not recovered`);
      });
    report(await measureRestart(began, recover, run));
    process.exit(0);
  } else {
    throw new Error(`restate.ts: unknown role ${role}`);
  }
  if (role !== "crash") process.exit(0);
}

await main();
