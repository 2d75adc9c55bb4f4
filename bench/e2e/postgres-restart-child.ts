// One process of bench/e2e's restart-to-done measurement on PostgreSQL
// (`postgres-restart.ts` starts it: `node postgres-restart-child.js <json>`
// compiled, or under tsx with `--import tsx … .ts`). Three modes:
//
// * `open`: opens the store (`recover: false`), reports `opened`, times
//   loading the AI SDK (`ai`, which defining an agent starts), closes and
//   exits;
// * `victim`: starts `workers` runs on new conversations whose first tool
//   call never returns, reports `ready` once every one is inside it, and
//   waits to be killed (kill -9);
// * `recover`: opens with the victim's instance id, reports `opened`,
//   defines the same agent with an instant tool, and reports `done` once
//   the runs' terminal commits are answered, with its timeline.
//
// Its only static imports are Node's and a bench helper of no imports
// (`answered.ts`), so the timeline shows what loading
// the rest costs: `pg`, then the host (`host/index.js`), then the
// PostgreSQL store's module (which `Phronomy.open` would load first thing),
// then the application's own (zod for the tools' schemas, the model).
// Every `pg` round trip (and connection) of the process is recorded: its
// kind, when it was sent, when it was answered (ms since the process
// started, `performance.now()`). One JSON report per stdout line.

import { callNotingAnswer, type Method } from "./answered.js";

export interface RestartChildConfig {
  readonly url: string;
  readonly schema: string;
  readonly workers: number;
  /** Conversation ids start with this. */
  readonly prefix: string;
  readonly instanceId: string;
  readonly mode: "open" | "victim" | "recover";
}

/** A `pg` round trip or connection of the process. */
export interface Trip {
  readonly kind: string;
  readonly sent: number;
  readonly answered: number;
  /** Terminal commits it carried (a group commit carries several). */
  readonly terminals: number;
  /** Barriers it carried. */
  readonly barriers: number;
}

export interface RestartChildReport {
  readonly type: "opened" | "ready" | "done" | "failed";
  /** `performance.timeOrigin` of the process: when it started (ms since the epoch). */
  readonly origin?: number;
  /** ms since the process started. */
  readonly marks?: Record<string, number>;
  readonly trips?: Trip[];
  readonly runs?: number;
  readonly message?: string;
}

const marks: Record<string, number> = { "first line": performance.now() };
const mark = (name: string): void => {
  marks[name] = performance.now();
};
const trips: Trip[] = [];

function report(line: RestartChildReport): void {
  process.stdout.write(`${JSON.stringify({ origin: performance.timeOrigin, ...line })}\n`);
}

/** The kind of a statement: the function a `SELECT f(…)` calls, else its
 * first words (a group commit: its size). */
function kindOf(text: string): string {
  const head = text.trimStart();
  const called = /^SELECT\s+(?:\*\s+FROM\s+)?(\w+)\(/i.exec(head);
  const name = called !== null ? `${called[1]}()` : head.split(/\s+/).slice(0, 3).join(" ").replace(/\(.*$/, "").slice(0, 40);
  const statements = text.split(";\nSELECT ").length;
  return statements > 1 ? "group commit" : name;
}

const count = (text: string, word: string): number => text.split(word).length - 1;

/** Records every query and connect of every `pg.Client` from now on. */
function recordTrips(client: { prototype: unknown }): void {
  const prototype = client.prototype as { query: Method; connect: Method };
  const timed = (original: Method, describe: (args: unknown[]) => { kind: string; text: string }): Method =>
    function (this: unknown, ...args: unknown[]): unknown {
      const { kind, text } = describe(args);
      const sent = performance.now();
      const note = (): void => {
        trips.push({ kind, sent, answered: performance.now(), terminals: count(text, "terminal_commit("), barriers: count(text, "barrier(") });
      };
      return callNotingAnswer(original, this, args, note);
    };
  prototype.query = timed(prototype.query, (args) => {
    const text = typeof args[0] === "string" ? args[0] : (args[0] as { text?: unknown } | undefined)?.text;
    return { kind: kindOf(typeof text === "string" ? text : ""), text: typeof text === "string" ? text : "" };
  });
  prototype.connect = timed(prototype.connect, () => ({ kind: "connect", text: "" }));
}

async function main(config: RestartChildConfig): Promise<void> {
  const pg = (await import("pg")).default;
  mark("pg loaded");
  recordTrips(pg.Client);
  const { Phronomy, tool } = await import("../../host/index.js");
  mark("host loaded");
  await import("../../host/store/postgres-store.js");
  mark("store module loaded");
  // The application's own modules: its tools' schemas (zod), its model.
  const { z } = await import("zod");
  const { agentRunModel } = await import("./workload.js");
  mark("application loaded");
  // Only opening: `recover: false` (nothing of its own to recover).
  const env = await Phronomy.open({
    store: config.url,
    postgres: { schema: config.schema, instanceId: config.instanceId },
    logger: { warn: () => undefined },
    ...(config.mode === "open" ? { recover: false } : {}),
  });
  mark("store open");
  report({ type: "opened", marks });
  if (config.mode === "open") {
    const began = performance.now();
    await import("ai");
    marks["ai load (ms)"] = performance.now() - began;
    // Leaves (its partitions released at once) for the victim to take them all.
    await env.close();
    report({ type: "done", marks, trips });
    return;
  }
  let entered = 0;
  let refused = 0;
  const settled = (): void => {
    if (entered + refused === config.workers) report({ type: "ready", runs: entered });
  };
  const gated = tool({
    inputSchema: z.object({ orderId: z.string() }),
    execute: () => {
      entered += 1;
      settled();
      return new Promise<{ orderId: string; status: string }>(() => undefined);
    },
  });
  const instant = tool({ inputSchema: z.object({ orderId: z.string() }), execute: ({ orderId }) => ({ orderId, status: "shipped" }) });
  const definition = env.agent({ name: "restart", model: agentRunModel(), tools: { lookup: config.mode === "victim" ? gated : instant }, memoryWindow: 1 });
  mark("agent defined");
  // The definition started loading the AI SDK: when it is there.
  void import("ai").then(
    () => mark("AI SDK loaded"),
    () => undefined,
  );
  if (config.mode === "victim") {
    for (let index = 0; index < config.workers; index += 1) {
      void definition
        .conversation(`${config.prefix}-${index}`)
        .start("Where is order 42?")
        .result.catch(() => {
          refused += 1;
          settled();
        });
    }
    // Killed by the bench.
    return new Promise(() => undefined);
  }
  const recovered = await definition.ready.then(() => undefined);
  void recovered;
  mark("definition recovered");
  // Done: as many terminal commits answered as runs were left.
  while (trips.reduce((sum, trip) => sum + trip.terminals, 0) < config.workers) await new Promise((resolve) => setTimeout(resolve, 2));
  mark("last run done");
  report({ type: "done", marks, trips });
  await env.close();
}

try {
  await main(JSON.parse(process.argv[2] ?? "{}") as RestartChildConfig);
  process.exit(0);
} catch (error) {
  report({ type: "failed", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}
