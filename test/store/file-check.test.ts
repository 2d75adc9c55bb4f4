// The check after every commit (host/store/sqlite/file-identity.ts,
// docs/decisions/0021): skipped while the store's directory is unchanged
// since a check that found nothing, yet a removed or replaced database or
// `-wal` file is always seen, and a directory changed too recently to be
// told apart by its times is never trusted.

import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readStoreFileIdentity, settledDirectoryMs, StoreFileCheck } from "../../host/store/sqlite/file-identity.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";

const opened: SqliteStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close().catch(() => undefined);
});

async function openStore(): Promise<string> {
  const path = join(mkdtempSync(join(tmpdir(), "phronomy-file-check-")), "store.db");
  opened.push(await SqliteStore.open(path, { offloadPolicy: "inline" }));
  return path;
}

/** A clock far enough ahead that the directory counts as settled. */
const later = () => Date.now() + settledDirectoryMs + 60_000;

describe("StoreFileCheck", () => {
  it("sees the -wal file removed after the directory was trusted", async () => {
    const path = await openStore();
    const check = new StoreFileCheck(path, readStoreFileIdentity(path), later);
    expect(check.change()).toBeUndefined();
    expect(check.change()).toBeUndefined();
    rmSync(`${path}-wal`);
    expect(check.change()).toBe(`${path}-wal was removed`);
  });

  it("sees the database replaced by another file through a rename", async () => {
    const path = await openStore();
    const check = new StoreFileCheck(path, readStoreFileIdentity(path), later);
    expect(check.change()).toBeUndefined();
    writeFileSync(`${path}.other`, "");
    renameSync(`${path}.other`, path);
    expect(check.change()).toBe(`${path} was replaced by another file`);
  });

  it("an unrelated file created beside the store leads to a full check that finds nothing", async () => {
    const path = await openStore();
    const check = new StoreFileCheck(path, readStoreFileIdentity(path), later);
    expect(check.change()).toBeUndefined();
    writeFileSync(join(path, "..", "notes.txt"), "beside the store");
    expect(check.change()).toBeUndefined();
  });

  it("a directory changed just now is never trusted: a removal in the same clock tick is still seen", async () => {
    const path = await openStore();
    // The real clock: the directory was just written (the store's files created).
    const check = new StoreFileCheck(path, readStoreFileIdentity(path));
    expect(check.change()).toBeUndefined();
    rmSync(`${path}-wal`);
    expect(check.change()).toBe(`${path}-wal was removed`);
  });
});
