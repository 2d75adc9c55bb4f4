// The native writer prototype (native/writer.c, bench/store/native-writer.ts,
// docs/decisions/0044) writes what the store writes: the same operations run
// through SqliteStore and through the writer leave equal rows, steps,
// journal and results, in both encodings (binary and JSON text); a stale
// revision and a duplicate id are refused with nothing written while their
// group-mates commit. The addon is a measured prototype, not part of the
// package: the test builds it first where it is not built (`sh
// native/build.sh`, gcc on Node's headers, ≈1–3 min the first time).
//
// The writer links its own copy of SQLite, which does not see the POSIX
// locks of better-sqlite3's copy in the same process (decision 0044): the
// native file is never open in both at once. SqliteStore makes it (schema,
// agent) and is closed; the writer writes; a fresh SqliteStore reads it back.

import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ExecutionRehydrationRequiredError } from "../../host/errors.js";
import type { OffloadOperation } from "../../host/store/offload-operation.js";
import type { StoreOperation } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { NativeWriter, nativeWriterPath, type NativeEncoding } from "../../bench/store/native-writer.js";
import { journalEntry, openTemporaryStore, track, prepare, providerBarrier, suspendForApproval, terminalCommit, toolBarrier } from "../store/fixtures.js";

beforeAll(() => {
  if (nativeWriterPath() !== undefined) return;
  execFileSync("sh", [fileURLToPath(new URL("../../native/build.sh", import.meta.url))], { stdio: "pipe" });
  expect(nativeWriterPath(), "native/build.sh ran but left no native/build/writer.node").toBeDefined();
}, 600_000);

/** A store's result without `firstOfAgent`, which the store contract makes
 * optional (records.ts) and the prototype does not report. */
function asThePrototypeSays(result: unknown): unknown {
  if (typeof result !== "object" || result === null || !("firstOfAgent" in result)) return result;
  const { firstOfAgent: _reported, ...rest } = result as Record<string, unknown>;
  return rest;
}

/** An agent run's operations with awkward text: quotes, backslashes,
 * control characters, accents and a character outside the BMP. */
function runOperations(executionId: string): OffloadOperation[] {
  const awkward = 'naïve "quoted" \\ back\nslash \t 🚀 \u0001';
  return [
    prepare(executionId, "support", { input: awkward, journal: [journalEntry(executionId, "user", awkward)] }),
    toolBarrier(executionId, 1),
    providerBarrier(executionId, 2, { steps: [{ kind: "tool_results", at: 33, payload: { callId: "tool-1", output: awkward } }], runningSince: 5 }),
    terminalCommit(executionId, 3),
  ];
}

async function readBack(store: SqliteStore, executionIds: readonly string[]): Promise<unknown> {
  const executions = await Promise.all(executionIds.map(async (id) => ({ execution: await store.getExecution(id), steps: await store.listSteps(id) })));
  return { executions, journal: await store.readJournal("support", 100), agent: await store.getAgent("support") };
}

describe.each(["binary", "json"] as NativeEncoding[])("native writer (%s)", (encoding) => {
  async function pair(): Promise<{ reference: SqliteStore; writer: NativeWriter; native: () => Promise<SqliteStore> }> {
    const reference = await openTemporaryStore({ offloadPolicy: "inline" });
    const made = await openTemporaryStore({ offloadPolicy: "inline" });
    await reference.ensureAgent("support", 1);
    await made.ensureAgent("support", 1);
    const path = made.path;
    await made.close();
    const writer = NativeWriter.open(path, "FULL", encoding);
    /** Closes the writer and opens the file again in SqliteStore. */
    const native = async (): Promise<SqliteStore> => {
      await writer.close();
      return track(await SqliteStore.open(path, { offloadPolicy: "inline" }));
    };
    return { reference, writer, native };
  }

  it("leaves the rows, steps, journal and results the store leaves, one operation at a time", async () => {
    const { reference, native, writer } = await pair();
    for (const operation of [...runOperations("e-ü-1"), prepare("e2", "support", { firstBarrier: { callId: "model-1" } }), suspendForApproval("e2", 2)]) {
      expect(await writer.run(operation)).toEqual(asThePrototypeSays(await reference.run(operation as StoreOperation)));
    }
    expect(await readBack(await native(), ["e-ü-1", "e2"])).toEqual(await readBack(reference, ["e-ü-1", "e2"]));
  });

  it("group-commits many runs at once and leaves what the store leaves", async () => {
    const { reference, native, writer } = await pair();
    const ids = Array.from({ length: 40 }, (_, index) => `run-${index}`);
    const runThrough = (run: (operation: OffloadOperation) => Promise<unknown>) =>
      Promise.all(
        ids.map(async (id) => {
          const results: unknown[] = [];
          for (const operation of runOperations(id)) results.push(await run(operation));
          return results;
        }),
      );
    const nativeResults = await runThrough((operation) => writer.run(operation));
    expect(nativeResults).toEqual(await runThrough(async (operation) => asThePrototypeSays(await reference.run(operation as StoreOperation))));
    expect(writer.statistics.largestGroup).toBeGreaterThan(1);
    const reopened = await native();
    expect(await readBack(reopened, ids)).toEqual(await readBack(reference, ids));
  });

  it("refuses a stale revision and a duplicate id with nothing written, while their group-mates commit", async () => {
    const { reference, native, writer } = await pair();
    await writer.run(prepare("e1"));
    await reference.run(prepare("e1"));
    const group = [writer.run(toolBarrier("e1", 7)), writer.run(prepare("e1")), writer.run(toolBarrier("e1", 1)), writer.run(prepare("e3"))];
    const settled = await Promise.allSettled(group);
    expect(settled[0]).toMatchObject({ status: "rejected", reason: expect.any(ExecutionRehydrationRequiredError) });
    expect(settled[1]).toMatchObject({ status: "fulfilled", value: { outcome: "not_established", error: { code: "INVALID_INPUT" } } });
    expect(settled[2]).toEqual({ status: "fulfilled", value: { revision: 2 } });
    expect(settled[3]).toEqual({ status: "fulfilled", value: { outcome: "active", revision: 1 } });
    await reference.run(toolBarrier("e1", 1));
    await reference.run(prepare("e3"));
    expect(await readBack(await native(), ["e1", "e3"])).toEqual(await readBack(reference, ["e1", "e3"]));
  });
});
