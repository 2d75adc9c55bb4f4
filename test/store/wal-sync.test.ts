// The store worker's answers wait for the sync of the write-ahead log that
// began after their commit (host/store/sqlite/wal-sync.ts, decision 0144).

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WalSync } from "../../host/store/sqlite/wal-sync.js";

/** A sync that finishes only when the test says so. */
function heldSyncs() {
  const pending: ((error: Error | null) => void)[] = [];
  return {
    sync: (_fd: number, done: (error: Error | null) => void) => void pending.push(done),
    pending,
    finish(error: Error | null = null) {
      const done = pending.shift();
      if (done === undefined) throw new Error("no sync is running");
      done(error);
    },
  };
}

describe("WalSync", () => {
  let dir: string;
  let log: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "phronomy-wal-sync-"));
    log = join(dir, "store.db-wal");
    writeFileSync(log, "");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("answers a commit only after a sync that began after it finished", () => {
    const syncs = heldSyncs();
    const walSync = new WalSync(log, syncs.sync);
    const sent: string[] = [];
    walSync.afterSync(() => sent.push("first"));
    expect(syncs.pending).toHaveLength(1);
    // Committed while the first sync runs: it waits for a second sync.
    walSync.afterSync(() => sent.push("second"));
    expect(sent).toEqual([]);
    expect(syncs.pending).toHaveLength(1);
    syncs.finish();
    expect(sent).toEqual(["first"]);
    expect(syncs.pending).toHaveLength(1);
    syncs.finish();
    expect(sent).toEqual(["first", "second"]);
    expect(syncs.pending).toHaveLength(0);
    walSync.close();
  });

  it("sends an answer that needs no sync at once when nothing waits, else after the ones before it", () => {
    const syncs = heldSyncs();
    const walSync = new WalSync(log, syncs.sync);
    const sent: string[] = [];
    walSync.inOrder(() => sent.push("checkpointed"));
    expect(sent).toEqual(["checkpointed"]);
    expect(syncs.pending).toHaveLength(0);
    walSync.afterSync(() => sent.push("settled"));
    walSync.inOrder(() => sent.push("closed"));
    expect(sent).toEqual(["checkpointed"]);
    syncs.finish();
    expect(sent).toEqual(["checkpointed", "settled"]);
    syncs.finish();
    expect(sent).toEqual(["checkpointed", "settled", "closed"]);
    walSync.close();
  });

  it("throws from a failed sync, sending none of the answers it covered", () => {
    const syncs = heldSyncs();
    const walSync = new WalSync(log, syncs.sync);
    const sent: string[] = [];
    walSync.afterSync(() => sent.push("settled"));
    expect(() => syncs.finish(new Error("EIO: i/o error, fdatasync"))).toThrow(/store\.db-wal could not be synced to disk: EIO/);
    expect(sent).toEqual([]);
    walSync.close();
  });

  it("syncs the log with fdatasync by default", async () => {
    const walSync = new WalSync(log);
    const sent = await new Promise<string>((resolve) => walSync.afterSync(() => resolve("settled")));
    expect(sent).toBe("settled");
    walSync.close();
  });
});
