// The child of test/crash/child-agents.test.ts:
//   node --import tsx test/crash/child-agents-process.ts <store> <parents> <point> <extraMs>
// opens the store, starts `parents` runs of the "support" agent (each calls
// the "researcher" agent as a durable child), prints `{"started": [ids]}`
// once every run is admitted, and kills itself with SIGKILL `extraMs` after
// the store first shows `point`: a parent suspended (`suspended`), a child
// written (`child`), a child ended (`child-ended`), a parent ended
// (`parent-ended`). Parents and children are left wherever they were.

import { writeSync } from "node:fs";
import { Phronomy } from "../../host/index.js";
import { defineAgents } from "./child-agents-fixture.js";

const [store, parents, point, extra] = process.argv.slice(2);

type Row = { readonly status: string; readonly metadata: { readonly config?: { readonly [key: string]: unknown } } };

/** Whether the rows show the kill point. */
function reached(rows: readonly Row[]): boolean {
  const isChild = (row: Row): boolean => row.metadata.config?.["parent"] !== undefined;
  if (point === "suspended") return rows.some((row) => !isChild(row) && row.status === "suspended");
  if (point === "child") return rows.some(isChild);
  if (point === "child-ended") return rows.some((row) => isChild(row) && row.status === "terminal");
  return rows.some((row) => !isChild(row) && row.status === "terminal");
}

async function main(): Promise<void> {
  const environment = await Phronomy.open({ store: store!, logger: { warn: (message) => writeSync(2, `${message}\n`) } });
  const { support } = defineAgents(environment);
  const runs = Array.from({ length: Number(parents) }, (_, index) => support.conversation(`user-${index}`).start("find me a kettle"));
  for (const run of runs) run.result.catch(() => undefined);
  const started = await Promise.all(runs.map((run) => run.executionId));
  writeSync(1, `${JSON.stringify({ started })}\n`);
  for (;;) {
    if (reached(await environment.executions({}))) break;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  setTimeout(() => process.kill(process.pid, "SIGKILL"), Number(extra));
}

setInterval(() => undefined, 1 << 30);
main().catch((error: unknown) => {
  writeSync(2, `child-agents child failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(3);
});
