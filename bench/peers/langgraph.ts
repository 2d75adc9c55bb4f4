// LangGraph.js with its SQLite checkpointer (@langchain/langgraph-checkpoint-sqlite,
// better-sqlite3, WAL), a child of bench/peers/run.ts:
// `node langgraph.js <role> <directory>`.
//
// Durability: `synchronous = FULL`, set here (BENCH_LANGGRAPH_SYNCHRONOUS=NORMAL
// measures the checkpointer as it ships). The checkpointer sets only
// `journal_mode=WAL`, and better-sqlite3 compiles SQLite with
// SQLITE_DEFAULT_WAL_SYNCHRONOUS=1: a WAL database it writes runs at
// `synchronous = NORMAL`, no fsync at a commit (counted with strace: ≈0.2
// fsync per run, the checkpoints', against ≈14.5 at FULL), so its
// checkpoints do not survive a power loss. Phronomy FULL fsyncs every
// commit: the table compares the two at the same durability
// (docs/decisions/0106).
//
// A run is a graph of two nodes, "model" and "tools", looping until the
// model answers: model → tools → model → tools → model, five super-steps,
// each checkpointed before the next starts (`durability: "sync"`); a
// conversation is a `thread_id`. The approval run's "tools" node calls
// `interrupt()` before the refund: the thread is suspended with its
// checkpoint written; `Command({ resume })` runs it on.
//
// LangGraph has no recovery of its own: after a crash the application
// re-invokes the threads it knows with `invoke(null)`, which continues
// from their last checkpoint (docs/decisions/0069).

import { Annotation, Command, END, interrupt, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { join } from "node:path";
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

const State = Annotation.Root({
  messages: Annotation<Message[]>({ reducer: (left, right) => left.concat(right), default: () => [] }),
});
type StateValue = typeof State.State;

type Tools = Record<string, (input: Record<string, unknown>) => unknown>;

function graph(checkpointer: SqliteSaver, model: FakeModel, tools: Tools, approval: boolean) {
  return new StateGraph(State)
    .addNode("model", async (state: StateValue) => ({ messages: [await callModel(model, state.messages)] }))
    .addNode("tools", async (state: StateValue) => {
      const calls = state.messages.at(-1)?.toolCalls ?? [];
      if (approval && interrupt({ calls }) !== true) throw new Error("the bench approves every refund");
      const results: Message[] = [];
      for (const call of calls) results.push(toolResult(call, await tools[call.toolName]!(call.input)));
      return { messages: results };
    })
    .addEdge(START, "model")
    .addConditionalEdges("model", (state: StateValue) => ((state.messages.at(-1)?.toolCalls?.length ?? 0) > 0 ? "tools" : END), ["tools", END])
    .addEdge("tools", "model")
    .compile({ checkpointer });
}

const config = (thread: string) => ({ configurable: { thread_id: thread }, durability: "sync" as const });

/** `FULL` unless BENCH_LANGGRAPH_SYNCHRONOUS says otherwise (see the top). */
const synchronous = process.env.BENCH_LANGGRAPH_SYNCHRONOUS ?? "FULL";
if (synchronous !== "FULL" && synchronous !== "NORMAL") throw new Error(`BENCH_LANGGRAPH_SYNCHRONOUS must be FULL or NORMAL, got ${synchronous}`);

function saver(directory: string, name: string): SqliteSaver {
  const checkpointer = SqliteSaver.fromConnString(join(directory, `${name}.sqlite`));
  // Set before the checkpointer's own `journal_mode=WAL`: an explicit
  // setting is kept when the database turns WAL.
  checkpointer.db.pragma(`synchronous = ${synchronous}`);
  return checkpointer;
}

function agent(checkpointer: SqliteSaver, tools: Tools = { lookup }) {
  const compiled = graph(checkpointer, agentRunModel, tools, false);
  return async (thread: string) => {
    const state = await compiled.invoke({ messages: [question()] }, config(thread));
    if (state.messages.at(-1)?.text !== "Order 42 has shipped.") throw new Error(`a LangGraph run of ${thread} did not answer`);
  };
}

async function main(): Promise<void> {
  const [role, directory] = [process.argv[2], process.argv[3]!];
  if (role === "loops") {
    report(await measureLoops(agent(saver(directory, "loops"))));
  } else if (role === "approvals") {
    const compiled = graph(saver(directory, "approvals"), refundModel, { refund }, true);
    const suspend = async (thread: string) => {
      const state = (await compiled.invoke({ messages: [refundRequest()] }, config(thread))) as StateValue & { __interrupt__?: unknown[] };
      if (!state.__interrupt__?.length) throw new Error(`LangGraph thread ${thread} did not suspend`);
    };
    const resume = async (thread: string) => {
      const state = await compiled.invoke(new Command({ resume: true }), config(thread));
      if (state.messages.at(-1)?.text !== "refunded") throw new Error(`LangGraph thread ${thread} did not end`);
    };
    report(await measureApprovals(suspend, resume));
  } else if (role === "crash") {
    let inTool = 0;
    const hang = () => {
      if (++inTool === CRASH_IN_FLIGHT) console.log("in-flight");
      return never;
    };
    const run = agent(saver(directory, "crash"), { lookup: hang });
    for (let index = 0; index < CRASH_IN_FLIGHT; index += 1) run(`crashed-${index}`).catch(() => undefined);
  } else if (role === "restart") {
    const began = performance.now();
    const checkpointer = saver(directory, "crash");
    const compiled = graph(checkpointer, agentRunModel, { lookup }, false);
    const recover = () =>
      pool(CRASH_IN_FLIGHT, CRASH_IN_FLIGHT, async (index) => {
        const state = await compiled.invoke(null, config(`crashed-${index}`));
        if (state.messages.at(-1)?.text !== "Order 42 has shipped.") throw new Error(`LangGraph thread crashed-${index} was not recovered`);
      });
    report(await measureRestart(began, recover, agent(checkpointer)));
  } else {
    throw new Error(`langgraph.ts: unknown role ${role}`);
  }
}

await main();
