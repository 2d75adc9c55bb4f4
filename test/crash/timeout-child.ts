// The child of test/crash/timeouts.test.ts:
//   node --import tsx test/crash/timeout-child.ts <store> <timeoutMs> <agent|start|recover>
// opens the store, starts one run of a model that never answers, with
// `timeoutMs` on the agent's definition (`agent`) or on the start
// (`start`), prints `{"executionId": …}` once the run is admitted (its
// preparation and first provider barrier are durable) and kills itself
// with SIGKILL: the execution is left in flight, with its budget running.
// `recover` instead recovers the store's unfinished run (the same hanging
// model), waits until the recovered session's first barrier is durable
// (it carries `metadata.runningSince`), prints it and kills itself.

import { writeSync } from "node:fs";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { Phronomy, type Environment } from "../../host/index.js";

const [store, timeout, where] = process.argv.slice(2);
const timeoutMs = Number(timeout);

/** Never answers; settles only when its call is aborted. */
const hanging: LanguageModelV4 = {
  specificationVersion: "v4",
  provider: "test",
  modelId: "hanging",
  supportedUrls: {},
  doGenerate: (options) => new Promise((_, reject) => options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason))),
  doStream: () => Promise.reject(new Error("not streamed")),
};

async function recoverAndDie(environment: Environment): Promise<void> {
  environment.agent({ id: "support", model: hanging });
  const [recovered] = await environment.recovery("support");
  if (recovered?.status !== "continued") throw new Error(`nothing continued: ${JSON.stringify(recovered)}`);
  for (;;) {
    const row = await environment.execution(recovered.executionId);
    if (typeof row?.metadata.runningSince === "number") {
      writeSync(1, `${JSON.stringify({ executionId: recovered.executionId, runningSince: row.metadata.runningSince })}\n`);
      process.kill(process.pid, "SIGKILL");
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function main(): Promise<void> {
  const environment = await Phronomy.open({ store: store!, logger: { warn: (message) => writeSync(2, `${message}\n`) } });
  if (where === "recover") return recoverAndDie(environment);
  const agent = environment.agent({ id: "support", model: hanging, ...(where === "agent" ? { timeoutMs } : {}) });
  const run = agent.start("Where is order 42?", where === "start" ? { timeoutMs } : {});
  run.result.catch(() => undefined);
  const executionId = await run.executionId;
  writeSync(1, `${JSON.stringify({ executionId })}\n`);
  process.kill(process.pid, "SIGKILL");
}

setInterval(() => undefined, 1 << 30);
main().catch((error: unknown) => {
  writeSync(2, `timeout child failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(3);
});
