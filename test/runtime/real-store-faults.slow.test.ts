// Real faults under a SQLite store (issue 11, "after faults, agents stay
// wedged"; docs/decisions/0020): while agents are in flight, the store's
// small tmpfs is filled to the last byte (disk full), or its files are made
// immutable (read-only), and then given back. The same
// environment must go on: every run settles during the fault, and after
// `env.recover()` every agent accepts a new start that completes, and every
// admitted execution has its row and ends.
//
// Mounting and `chattr +i` need root (CI runs as root, like its
// PostgreSQL); without it the tests fail loudly, never skip.

import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, tool, type Agent, type Environment, type Run } from "../../host/index.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import { agentRunModel, deferred, lookupTool, recordingLogger } from "./helpers.js";

const AGENTS = 20;
const CALLS_BEFORE_FAULT = 8;
/** The tmpfs: room for the store, small enough to fill at once. */
const MOUNT_SIZE = "16m";

const mounts: string[] = [];
/** Directories whose store files may still be immutable. */
const immutables: string[] = [];
const environments: Environment[] = [];
/** Files that released a held store worker. */
const gates: string[] = [];

afterEach(async () => {
  // A worker still held is let go first: closing waits for its answer.
  for (const gate of gates) writeFileSync(gate, "");
  for (const env of environments.splice(0)) await env.close().catch(() => undefined);
  for (const gate of gates.splice(0)) rmSync(gate, { force: true });
  for (const directory of immutables.splice(0)) {
    for (const path of storeFiles(directory)) {
      try {
        execFileSync("chattr", ["-i", path], { stdio: "pipe" });
      } catch {
        // Not there, or never made immutable.
      }
    }
    rmSync(directory, { recursive: true, force: true });
  }
  for (const directory of mounts.splice(0)) {
    try {
      execFileSync("umount", ["-l", directory]);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }
});

function mountTmpfs(): string {
  const directory = mkdtempSync(join(tmpdir(), "phronomy-fault-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${MOUNT_SIZE}`, "tmpfs", directory], { stdio: "pipe" });
  } catch (error) {
    rmSync(directory, { recursive: true, force: true });
    throw new Error(`these tests mount a small tmpfs to fill it or make it read-only, which needs root: ${String(error)}`);
  }
  mounts.push(directory);
  return directory;
}

/** Writes zeros until the file system is full; returns the filler's path. */
async function fillUp(directory: string): Promise<string> {
  const path = join(directory, "filler");
  const handle = await open(path, "w");
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) await handle.write(chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    await handle.close().catch(() => undefined);
  }
  // The last partial chunks too.
  try {
    for (;;) writeFileSync(path, Buffer.alloc(512), { flag: "a" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  }
  return path;
}

interface Fault {
  readonly begin: (directory: string) => Promise<void>;
  readonly end: (directory: string) => Promise<void>;
}

const diskFull: Fault = {
  begin: async (directory) => {
    await fillUp(directory);
  },
  end: async (directory) => {
    await rm(join(directory, "filler"));
  },
};

/** The store's files made immutable (`chattr +i`): on ext4 even a file
 * already open for writing refuses every write (EPERM), which is what a
 * file system remounted read-only after an error does to an open database
 * (a busy tmpfs cannot be remounted read-only to show it). */
const storeFiles = (directory: string): string[] => ["store.db", "store.db-wal"].map((name) => join(directory, name));
const readOnly: Fault = {
  begin: async (directory) => {
    execFileSync("chattr", ["+i", ...storeFiles(directory)], { stdio: "pipe" });
  },
  end: async (directory) => {
    execFileSync("chattr", ["-i", ...storeFiles(directory)], { stdio: "pipe" });
  },
};

/** Opens the store with its worker's start held until `release()`
 * (`test/support/held-store-worker.mjs`): meanwhile every write commits
 * inline, as on a loaded machine whose worker thread starts late. */
async function openWithWorkerHeld(directory: string): Promise<{ env: Environment; release: () => Promise<void> }> {
  const gate = join(directory, "..", `${basename(directory)}-worker-gate`);
  const bundle = process.env["PHRONOMY_TEST_STORE_WORKER"];
  if (bundle === undefined) throw new Error("the store worker's test bundle is not named (test/support/store-worker-bundle.ts)");
  const saved = { ...process.env };
  // A worker thread copies the environment when it is created, during the open.
  Object.assign(process.env, {
    PHRONOMY_TEST_STORE_WORKER: fileURLToPath(new URL("../support/held-store-worker.mjs", import.meta.url)),
    PHRONOMY_TEST_WORKER_GATE: gate,
    PHRONOMY_TEST_WORKER_HELD: pathToFileURL(bundle).href,
  });
  let env: Environment;
  try {
    env = await Phronomy.open({ store: join(directory, "store.db"), logger: recordingLogger() });
  } finally {
    process.env["PHRONOMY_TEST_STORE_WORKER"] = bundle;
    for (const name of ["PHRONOMY_TEST_WORKER_GATE", "PHRONOMY_TEST_WORKER_HELD"]) if (saved[name] === undefined) delete process.env[name];
  }
  gates.push(gate);
  const store = env.store as SqliteStore;
  const release = async (): Promise<void> => {
    writeFileSync(gate, "");
    while (store.offloadStatistics.workerState === "starting") await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { env, release };
}

async function episode(
  fault: Fault,
  directory: string,
  options: { workerStartsDuringFault?: boolean } = {},
): Promise<{ admitted: number; failedDuringFault: number }> {
  const held = options.workerStartsDuringFault === true ? await openWithWorkerHeld(directory) : undefined;
  const env = held?.env ?? (await Phronomy.open({ store: join(directory, "store.db"), logger: recordingLogger() }));
  environments.push(env);
  const started = { count: 0, reached: deferred() };
  const lookup = tool({
    description: "Looks an order up",
    inputSchema: z.object({ orderId: z.string() }),
    execute: async ({ orderId }) => {
      if (++started.count === CALLS_BEFORE_FAULT) started.reached.resolve();
      await new Promise((resolve) => setTimeout(resolve, 2));
      return { orderId, status: "shipped" };
    },
  });
  const agents: Agent[] = [];
  for (let index = 0; index < AGENTS; index += 1) agents.push(env.agent({ id: `agent-${index}`, model: agentRunModel(), tools: { lookup } }));
  // Agents first started during the fault: their preparations fail.
  const late: Agent[] = [];
  for (let index = 0; index < 4; index += 1) late.push(env.agent({ id: `late-${index}`, model: agentRunModel(), tools: { lookup } }));
  const runs: Run[] = agents.map((agent) => agent.start("Where is order 42?"));
  await started.reached.promise;

  await fault.begin(directory);
  // The worker opens the store now, while the fault lasts.
  await held?.release();
  // During the fault: every run settles, and new starts fail cleanly.
  const during = [...late.map((agent) => agent.start("And order 43?")), ...runs];
  const outcomes = await Promise.allSettled(during.map((run) => run.result));
  const admitted = (
    await Promise.all(
      during.map((run) =>
        run.executionId.then(
          (id) => id,
          () => undefined,
        ),
      ),
    )
  ).filter((id): id is string => id !== undefined);
  await fault.end(directory);

  await env.recover();
  for (const executionId of admitted) {
    expect(await env.execution(executionId), `the row of ${executionId}`).toBeDefined();
    await env.wait(executionId).result.catch(() => undefined);
  }
  expect(await env.executions({ status: "active" })).toEqual([]);
  for (const agent of [...agents, ...late]) {
    await expect(agent.start("Anything else?").result, `a new start of ${agent.id}`).resolves.toMatchObject({ outcome: "completed" });
  }
  return { admitted: admitted.length, failedDuringFault: outcomes.filter((outcome) => outcome.status === "rejected").length };
}

describe("real store faults under SQLite (a tmpfs of its own)", () => {
  it("disk full while agents are in flight: runs settle, env.recover() releases every agent, nothing admitted is lost", async () => {
    const { failedDuringFault } = await episode(diskFull, mountTmpfs());
    // The fault hit work in flight (otherwise this proves nothing).
    expect(failedDuringFault).toBeGreaterThan(0);
  }, 60_000);

  it("store made read-only while agents are in flight: runs settle, env.recover() releases every agent, nothing admitted is lost", async () => {
    const directory = mkdtempSync(join(tmpdir(), "phronomy-fault-"));
    immutables.push(directory);
    const { failedDuringFault } = await episode(readOnly, directory);
    expect(failedDuringFault).toBeGreaterThan(0);
  }, 60_000);

  it("store made read-only while agents are in flight, the store's worker starting during the fault: env.recover() releases every agent", async () => {
    const directory = mkdtempSync(join(tmpdir(), "phronomy-fault-"));
    immutables.push(directory);
    const { failedDuringFault } = await episode(readOnly, directory, { workerStartsDuringFault: true });
    expect(failedDuringFault).toBeGreaterThan(0);
  }, 60_000);

  // The CI failure of this file's read-only episode (docs/decisions/0090):
  // under load the store's worker, started in the background at open, first
  // opened the store while its files were immutable. SQLite then opens the
  // file read-only without a word, and that connection stayed read-only
  // after the fault: every write the worker took later failed with
  // SQLITE_READONLY, so `env.recover()` continued the held executions only
  // to see their barriers refused again. Here the worker's replacement
  // opens the store during the fault, which needs no timing to happen.
  it("a store worker that opened the store while it was read-only writes once the store is writable again", async () => {
    const directory = mkdtempSync(join(tmpdir(), "phronomy-fault-"));
    immutables.push(directory);
    const env = await Phronomy.open({ store: join(directory, "store.db"), logger: recordingLogger(), offloadPolicy: "worker" });
    environments.push(env);
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(agent.start("Where is order 42?").result).resolves.toMatchObject({ outcome: "completed" });
    const store = env.store as SqliteStore;
    const offload = (store as unknown as { offload: { workerThread?: { terminate(): Promise<number> } } }).offload;

    await readOnly.begin(directory);
    // The worker dies during the fault; its replacement opens the store now.
    await offload.workerThread?.terminate();
    while (store.offloadStatistics.workerState !== "ready") await new Promise((resolve) => setTimeout(resolve, 5));
    expect(store.offloadStatistics.workerRestarts).toBe(1);
    await readOnly.end(directory);

    await expect(agent.start("And order 43?").result).resolves.toMatchObject({ outcome: "completed" });
  }, 60_000);

  it("an owner opening a store whose files refuse writes is refused with STORE, and opens once they are writable", async () => {
    const directory = mkdtempSync(join(tmpdir(), "phronomy-fault-"));
    immutables.push(directory);
    const store = join(directory, "store.db");
    await (await Phronomy.open({ store, logger: recordingLogger() })).close();
    // Closed, the store has no log file: an empty one is a log with nothing in it.
    writeFileSync(`${store}-wal`, "");
    await readOnly.begin(directory);
    await expect(Phronomy.open({ store, logger: recordingLogger() })).rejects.toMatchObject({ code: "STORE", details: { reason: "store_read_only" } });
    await readOnly.end(directory);
    const env = await Phronomy.open({ store, logger: recordingLogger() });
    environments.push(env);
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(agent.start("Where is order 42?").result).resolves.toMatchObject({ outcome: "completed" });
  }, 60_000);

  it("a visitor's first filing while the store refuses writes fails with STORE, and the next one, once it is writable, is filed", async () => {
    const directory = mkdtempSync(join(tmpdir(), "phronomy-fault-"));
    immutables.push(directory);
    const store = join(directory, "store.db");
    const owner = await Phronomy.open({ store, logger: recordingLogger() });
    environments.push(owner);
    const visitor = await Phronomy.open({ store, visitor: true, logger: recordingLogger() });
    environments.push(visitor);
    await readOnly.begin(directory);
    await expect(visitor.signal("payment:42", { amount: 30 })).rejects.toMatchObject({ code: "STORE" });
    await readOnly.end(directory);
    await expect(visitor.signal("payment:42", { amount: 30 })).resolves.toMatchObject({ status: "stored" });
  }, 60_000);
});
