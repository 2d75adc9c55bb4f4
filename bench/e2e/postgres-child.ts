// One coordinator process of bench/e2e's PostgreSQL spread measurement
// (`postgres.ts` starts it: `node --import tsx postgres-child.ts <json>`).
// It opens the store's schema, defines its agents (taking their leases) and
// warms them up, reports `ready`, waits for a `go` line on stdin, runs the
// workload for the given seconds, reports `finished` with its figures,
// closes and exits. One JSON report per stdout line. (`postgres.ts`
// imports only its types.)

import { createInterface } from "node:readline";
import { Phronomy } from "../../host/index.js";
import { defineAgents, runFor, warmUp } from "./workload.js";

export interface ChildConfig {
  /** The database URL (the schema is given apart). */
  readonly url: string;
  readonly schema: string;
  readonly seconds: number;
  readonly agentIds: readonly string[];
}

export interface ChildReport {
  readonly type: "ready" | "finished" | "failed";
  readonly runs?: number;
  readonly elapsedMs?: number;
  readonly latencies?: number[];
  readonly message?: string;
}

function report(line: ChildReport): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function main(config: ChildConfig): Promise<void> {
  const env = await Phronomy.open({ store: config.url, postgres: { schema: config.schema }, logger: { warn: () => undefined } });
  const agents = await defineAgents(env, config.agentIds);
  await warmUp(agents);
  const go = new Promise<void>((resolve) => createInterface({ input: process.stdin }).on("line", (line) => {
    if (line === "go") resolve();
  }));
  report({ type: "ready" });
  await go;
  const figures = await runFor(agents, config.seconds);
  report({ type: "finished", runs: figures.runs, elapsedMs: figures.elapsedMs, latencies: figures.latencies });
  await env.close();
}

try {
  await main(JSON.parse(process.argv[2] ?? "{}") as ChildConfig);
  process.exit(0);
} catch (error) {
  report({ type: "failed", message: error instanceof Error ? error.message : String(error) });
  process.exit(1);
}
