// The schedule crash child: `node --import tsx test/crash/schedule-child.ts <json>`
// (`{ store, kill }`). It opens the store, patches one schedule operation
// of its store to kill the process with SIGKILL there, then defines the
// "support" definition, which starts the sweep: the schedule the parent
// made (due already) is claimed and fired. Kill points:
// (On PostgreSQL, `postgres` names the schema and the instance.)
// `before-claim` (nothing committed), `after-claim` (the claim committed,
// no start made), `before-settle` (the start admitted and prepared, the
// firing not settled), `after-settle` (all of it committed).

import { writeSync } from "node:fs";
import { Phronomy } from "../../host/index.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import type { ScheduleStore } from "../../host/store/schedule-records.js";

export type ScheduleKillPoint = "before-claim" | "after-claim" | "before-settle" | "after-settle";

/** `store`: a SQLite path, or a PostgreSQL URL with `postgres` (schema, instance id). */
export interface ScheduleChildConfig {
  readonly store: string;
  readonly kill: ScheduleKillPoint;
  readonly postgres?: { readonly schema: string; readonly instanceId: string; readonly leaseMs: number };
}

const config = JSON.parse(process.argv[2] ?? "{}") as ScheduleChildConfig;

function die(point: string): never {
  writeSync(1, `${JSON.stringify({ type: "killing", point })}\n`);
  process.kill(process.pid, "SIGKILL");
  for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000);
}

const env = await Phronomy.open({
  store: config.store,
  logger: { warn: (message) => writeSync(2, `${message}\n`) },
  ...(config.postgres !== undefined ? { postgres: config.postgres } : {}),
});
const store = env.store as unknown as ScheduleStore;
const claim = store.claimSchedules.bind(store);
const settle = store.settleScheduleFiring.bind(store);
store.claimSchedules = async (claims) => {
  if (config.kill === "before-claim") die("before-claim");
  const claimed = await claim(claims);
  if (config.kill === "after-claim" && claimed.length > 0) die("after-claim");
  return claimed;
};
store.settleScheduleFiring = async (settlement) => {
  if (config.kill === "before-settle") die("before-settle");
  const settled = await settle(settlement);
  if (config.kill === "after-settle") die("after-settle");
  return settled;
};
env.agent({ name: "support", model: scriptedModel(() => ({ text: "digest sent" })) });
setTimeout(() => {
  writeSync(1, `${JSON.stringify({ type: "not-killed" })}\n`);
  process.exit(3);
}, 60_000);
