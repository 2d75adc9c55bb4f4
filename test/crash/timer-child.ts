// The timer crash child: `node --import tsx test/crash/timer-child.ts
// <json {store, ms}>`. Opens the store, starts one run of the sleeper
// agent (a `timer()` call of `ms` milliseconds), prints
// `{ executionId, dueAt }` once the wait is durable (listed pending), and
// kills itself with SIGKILL while waiting (docs/decisions/0076).

import { writeSync } from "node:fs";
import { Phronomy } from "../../host/index.js";
import { sleeperDefinition } from "./timer-fixture.js";

const config = JSON.parse(process.argv[2] ?? "{}") as { store: string; ms: number };

const env = await Phronomy.open({ store: config.store });
const run = env.agent(sleeperDefinition(config.ms)).start("go");
const executionId = await run.executionId;
for (;;) {
  const pending = (await env.pendingApprovals()).find((item) => item.executionId === executionId);
  if (pending !== undefined) {
    writeSync(1, `${JSON.stringify({ executionId, dueAt: pending.dueAt })}\n`);
    process.kill(process.pid, "SIGKILL");
  }
  await new Promise((resolve) => setTimeout(resolve, 10));
}
