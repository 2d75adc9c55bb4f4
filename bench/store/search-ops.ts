// bench/store/search-ops: the store's own work for the writes of a run that
// carry its search text (docs/decisions/0095), to be counted under
// callgrind: a start (the input), a provider barrier and the end (the
// output), each in its own transaction through `commitGroup`, on a
// connection opened as the store opens it (`NORMAL`), with no runtime
// around them; where the store sweeps its search index, one sweep every 85
// runs (the offload asks for one every 512 operations, about 85 runs of
// six), so that the index's work is counted where it is now done.
//
//   node scripts/bench-compiled.mjs bench/store/search-ops.ts [runs]
//   valgrind --tool=callgrind node build/bench-dist/bench/store/search-ops.js <runs>
//
// Count twice (say 300 and 1,300 runs) and divide the difference by the
// runs between: the opening, the compiler's warm-up and the exit cancel.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStoreConnection } from "../../host/store/sqlite/schema.js";
import { commitGroup } from "../../host/store/sqlite/transaction.js";
import type { OffloadOperation } from "../../host/store/offload-operation.js";

const runs = Number(process.argv[2] ?? 1_000);
const sweepEveryRuns = 85;
const directory = mkdtempSync(join(tmpdir(), "phronomy-search-ops-"));
type Sweep = (connection: ReturnType<typeof openStoreConnection>, now: number) => unknown;
let sweep: Sweep | undefined;
try {
  sweep = ((await import("../../host/store/sqlite/search-index.js")) as { sweepSearchIndex: Sweep }).sweepSearchIndex;
} catch {
  sweep = undefined; // a tree whose index is kept by triggers
}
try {
  const connection = openStoreConnection(join(directory, "store.db"), { synchronous: "NORMAL" });
  const commit = (operation: unknown) => {
    const [settlement] = commitGroup(connection, [operation as OffloadOperation]);
    if (settlement === undefined || !settlement.ok) throw new Error(`search-ops: ${JSON.stringify(settlement)}`);
  };
  commit({ type: "ensureAgent", agentId: "support", at: 1 });
  const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
  for (let index = 0; index < runs; index += 1) {
    const executionId = `run-${index}`;
    commit({
      type: "prepareExecution",
      executionId,
      agentId: "support",
      mode: "run",
      input: `Where is order ${index}? It was a blue sweater, size M.`,
      config: { replayable: true },
      journal: [{ executionId, role: "user", content: `Where is order ${index}?`, at: 10 }],
      at: 10,
    });
    commit({ type: "providerBarrier", executionId, expectedRevision: 1, callId: "model-1", steps: [], usage, turns: 1, at: 21 });
    commit({
      type: "terminalCommit",
      executionId,
      expectedRevision: 2,
      outcome: "completed",
      output: `Order ${index} ships today from the Leeds warehouse.`,
      error: null,
      usage,
      approvalRequest: null,
      handoff: null,
      steps: [{ kind: "model_response", at: 40, payload: { text: "ships today" } }],
      journal: [{ executionId, role: "assistant", content: `Order ${index} ships today.`, at: 40 }],
      at: 42,
    });
    if (sweep !== undefined && (index + 1) % sweepEveryRuns === 0) sweep(connection, Date.now());
  }
  connection.close();
  console.log(`search-ops: ${runs} runs${sweep === undefined ? " (index kept by triggers)" : ", swept every 85"}`);
} finally {
  rmSync(directory, { recursive: true, force: true });
}
