// One owner per embedded store (docs/decisions/0007), for real: a second
// open of an owned store — from this process or from a child process —
// fails at once with a StoreError naming the path and the owner; close
// releases ownership; a refused open leaves the owner's lock intact; and
// after the owner is killed with SIGKILL the next open succeeds at once.

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { StoreError } from "../../host/errors.js";
import { ownerInfoPath } from "../../host/store/sqlite/owner-file.js";
import { ownerLockPath } from "../../host/store/sqlite/ownership.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { prepare, rawExec, temporaryDirectory, track } from "./fixtures.js";
import { childNodeFlags } from "../support/node-flags.js";

const childScript = fileURLToPath(new URL("./fixtures/owner-child.ts", import.meta.url));
const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
/** Starting a child (Node, tsx, the store worker) takes a second or two on a busy machine. */
const childStartMs = 30_000;

const children: ChildProcessWithoutNullStreams[] = [];

afterEach(async () => {
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await exited(child);
      }
    }),
  );
});

function startChild(mode: "hold" | "try", path: string): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, [...childNodeFlags, "--import", "tsx", childScript, mode, path], { cwd: repositoryRoot, stdio: "pipe" });
  children.push(child);
  return child;
}

function exited(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** The child's first line of output (its stderr in the error when it exits first). */
function firstLine(child: ChildProcessWithoutNullStreams): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = "";
    let errors = "";
    const timer = setTimeout(() => reject(new Error(`the child printed nothing within ${childStartMs} ms; stderr: ${errors}`)), childStartMs);
    child.stderr.on("data", (chunk: Buffer) => {
      errors += chunk.toString();
    });
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const end = output.indexOf("\n");
      if (end >= 0) {
        clearTimeout(timer);
        resolve(output.slice(0, end));
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the child exited (code ${code}, signal ${signal}) before printing a line; stderr: ${errors}`));
    });
  });
}

async function openRefused(path: string): Promise<StoreError> {
  const error = await SqliteStore.open(path).then(
    async (store) => {
      await store.close();
      throw new Error("the store opened");
    },
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

async function storePath(): Promise<string> {
  return join(await temporaryDirectory(), "agents.db");
}

describe("one owner per store, within one process", () => {
  it("a second open fails at once naming the path and this process; the owner keeps working; close releases it", async () => {
    const path = await storePath();
    const first = track(await SqliteStore.open(path));
    expect(first.owner).toMatchObject({ pid: process.pid, hostname: hostname() });
    expect(JSON.parse(readFileSync(ownerInfoPath(path), "utf8"))).toEqual(first.owner);

    const started = performance.now();
    const refused = await openRefused(path);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(refused.code).toBe("STORE");
    expect(refused.message).toContain(
      `the store at ${path} is already open, owned by this very process (pid ${process.pid} on ${hostname()}, since ${first.owner.startedAt})`,
    );
    expect(refused.message).toMatch(/close the other process \(or its store\) first, or open this store as a visitor/);
    expect(refused.details).toEqual({ reason: "store_owned", storePath: path, owner: first.owner });

    await first.ensureAgent("support", 1);
    expect(await first.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
    await first.close();
    expect(existsSync(ownerInfoPath(path))).toBe(false);
    expect(existsSync(ownerLockPath(path))).toBe(true); // never deleted (see ownership.ts)

    const second = track(await SqliteStore.open(path));
    expect((await second.getExecution("e1"))?.revision).toBe(1);
  });

  it("stores in one directory are owned independently", async () => {
    const directory = await temporaryDirectory();
    track(await SqliteStore.open(join(directory, "a.db")));
    track(await SqliteStore.open(join(directory, "b.db")));
  });

  it("an open refused for another reason releases the ownership it took", async () => {
    const path = await storePath();
    rawExec(path, "CREATE TABLE invoices (id INTEGER)");
    expect((await openRefused(path)).message).toMatch(/another application/);
    expect((await openRefused(path)).message).toMatch(/another application/);
    expect(existsSync(ownerInfoPath(path))).toBe(false);
  });
});

describe("one owner per store, across processes", () => {
  it("a refused open in the owning process leaves the lock held against other processes", async () => {
    const path = await storePath();
    track(await SqliteStore.open(path));
    await openRefused(path);
    const outcome = JSON.parse(await firstLine(startChild("try", path))) as { opened: boolean; code?: string; message?: string };
    expect(outcome).toMatchObject({ opened: false, code: "STORE" });
    expect(outcome.message).toContain(`the store at ${path} is already open, owned by process ${process.pid} on ${hostname()}`);
  });

  it("after the owner is killed with SIGKILL, the next open succeeds at once", async () => {
    const path = await storePath();
    const child = startChild("hold", path);
    expect(await firstLine(child)).toBe(`ready ${child.pid}`);

    const refused = await openRefused(path);
    expect(refused.message).toContain(`the store at ${path} is already open, owned by process ${child.pid} on ${hostname()} (since `);
    expect(refused.message).toContain("close the other process");
    expect(refused.details).toMatchObject({ reason: "store_owned", owner: { pid: child.pid, hostname: hostname() } });

    expect(process.kill(child.pid!, "SIGKILL")).toBe(true);
    await exited(child);
    expect(child.signalCode).toBe("SIGKILL");

    const started = performance.now();
    const store = track(await SqliteStore.open(path));
    expect(performance.now() - started).toBeLessThan(2_000); // no stale-lock timeout
    expect(store.owner.pid).toBe(process.pid);
    expect(JSON.parse(readFileSync(ownerInfoPath(path), "utf8"))).toEqual(store.owner); // the dead owner's file replaced
    await store.ensureAgent("support", 1);
    expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
  });
});
