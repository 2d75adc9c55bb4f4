// A store worker whose start is held (test/runtime/real-store-faults.slow.test.ts):
// started in place of the test bundle (`PHRONOMY_TEST_STORE_WORKER`), it
// waits until the file named in `PHRONOMY_TEST_WORKER_GATE` exists, then
// runs the real worker (`PHRONOMY_TEST_WORKER_HELD`) in this thread, with
// its `workerData`. So a test chooses when the worker opens the store, as
// a loaded machine sometimes does for it (docs/decisions/0090).

import { existsSync } from "node:fs";

const gate = process.env["PHRONOMY_TEST_WORKER_GATE"];
const held = process.env["PHRONOMY_TEST_WORKER_HELD"];
if (gate === undefined || held === undefined) throw new Error("held-store-worker needs PHRONOMY_TEST_WORKER_GATE and PHRONOMY_TEST_WORKER_HELD");
while (!existsSync(gate)) await new Promise((resolve) => setTimeout(resolve, 2));
await import(held);
