// DBOS Transact (@dbos-inc/dbos-sdk) on the local PostgreSQL (database
// `test`, a schema of its own per child, dropped by bench/peers/run.ts), a
// child of run.ts: `node dbos.js <role> <schema>`.
//
// A run is a workflow (its id the conversation) of five steps
// (`DBOS.runStep`): model, tool, model, tool, model; DBOS checkpoints each
// step's output before the next starts, and the workflow's start and end.
// The approval run is model → `DBOS.recv("approval")` → refund → model;
// the bench approves with `DBOS.send`. After a kill -9, `DBOS.launch()`
// recovers the killed executor's pending workflows by itself
// (docs/decisions/0069).

import { DBOS, type WorkflowHandle } from "@dbos-inc/dbos-sdk";
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

export const postgresUrl = process.env.BENCH_PEERS_POSTGRES ?? "postgresql://postgres@127.0.0.1:5432/test";

type Tools = Record<string, (input: Record<string, unknown>) => unknown>;
let tools: Tools = { lookup, refund };
/** Told when an approval workflow is about to wait in `recv`. */
const suspending = new Map<string, () => void>();

async function conversation(model: FakeModel, first: Message, approval: boolean): Promise<string> {
  const messages: Message[] = [first];
  for (;;) {
    const answer = await DBOS.runStep(() => callModel(model, messages), { name: "model" });
    messages.push(answer);
    if (answer.toolCalls === undefined) return answer.text ?? "";
    if (approval) {
      suspending.get(DBOS.workflowID!)?.();
      if ((await DBOS.recv<boolean>("approval", { timeoutSeconds: 24 * 3600 })) !== true) throw new Error("the bench approves every refund");
    }
    for (const call of answer.toolCalls) {
      const output = await DBOS.runStep(async () => tools[call.toolName]!(call.input), { name: call.toolName });
      messages.push(toolResult(call, output));
    }
  }
}

const agentRun = DBOS.registerWorkflow(() => conversation(agentRunModel, question(), false), { name: "agentRun" });
const refundRun = DBOS.registerWorkflow(() => conversation(refundModel, refundRequest(), true), { name: "refundRun" });

async function launch(schema: string): Promise<void> {
  DBOS.setConfig({
    name: "phronomy-bench",
    systemDatabaseUrl: postgresUrl,
    systemDatabaseSchemaName: schema,
    applicationVersion: "bench",
    logLevel: "error",
  });
  await DBOS.launch();
}

async function run(workflowID: string): Promise<void> {
  const handle = await DBOS.startWorkflow(agentRun, { workflowID })();
  if ((await handle.getResult()) !== "Order 42 has shipped.") throw new Error(`DBOS workflow ${workflowID} did not answer`);
}

async function main(): Promise<void> {
  const [role, schema] = [process.argv[2], process.argv[3]!];
  if (role === "loops") {
    await launch(schema);
    report(await measureLoops(run));
  } else if (role === "approvals") {
    await launch(schema);
    const handles = new Map<string, WorkflowHandle<string>>();
    const suspend = async (workflowID: string) => {
      const waiting = new Promise<void>((resolve) => suspending.set(workflowID, resolve));
      handles.set(workflowID, await DBOS.startWorkflow(refundRun, { workflowID })());
      await waiting;
      suspending.delete(workflowID);
    };
    const resume = async (workflowID: string) => {
      await DBOS.send(workflowID, true, "approval");
      if ((await handles.get(workflowID)!.getResult()) !== "refunded") throw new Error(`DBOS workflow ${workflowID} did not end`);
      handles.delete(workflowID);
    };
    report(await measureApprovals(suspend, resume));
  } else if (role === "crash") {
    let inTool = 0;
    tools = {
      lookup: () => {
        if (++inTool === CRASH_IN_FLIGHT) console.log("in-flight");
        return never;
      },
    };
    await launch(schema);
    for (let index = 0; index < CRASH_IN_FLIGHT; index += 1) run(`crashed-${index}`).catch(() => undefined);
  } else if (role === "restart") {
    const began = performance.now();
    await launch(schema); // recovers the killed process's workflows
    const recover = () =>
      pool(CRASH_IN_FLIGHT, CRASH_IN_FLIGHT, async (index) => {
        if ((await DBOS.retrieveWorkflow<string>(`crashed-${index}`).getResult()) !== "Order 42 has shipped.")
          throw new Error(`DBOS workflow crashed-${index} was not recovered`);
      });
    report(await measureRestart(began, recover, run));
  } else {
    throw new Error(`dbos.ts: unknown role ${role}`);
  }
  if (role !== "crash") await DBOS.shutdown();
}

await main();
