// A refused open leaves the disk as it was (issue 11, bug 10): every option
// is checked, and every existing file judged, before the store's lock file,
// database or side files are created. Each case opens through the public
// API and compares the directory (names and bytes) before and after.

import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Phronomy, PhronomyError, type OpenOptions } from "../../host/index.js";
import { schemaVersion } from "../../host/store/sqlite/schema.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { fileBytes, rawExec, temporaryDirectory } from "./fixtures.js";

/** Every entry of the directory with its bytes (directories as "dir"). */
async function listing(directory: string): Promise<Record<string, string>> {
  const entries = await readdir(directory, { withFileTypes: true });
  const shown: Record<string, string> = {};
  for (const entry of entries) shown[entry.name] = entry.isDirectory() ? "dir" : (await fileBytes(join(directory, entry.name))).toString("base64");
  return shown;
}

async function expectRefusedLeavingNothing(directory: string, options: OpenOptions, code: string, message: RegExp): Promise<void> {
  const before = await listing(directory);
  const error = await Phronomy.open(options).then(
    async (env) => {
      await env.close();
      throw new Error("the environment opened");
    },
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(PhronomyError);
  expect((error as PhronomyError).code).toBe(code);
  expect((error as PhronomyError).message).toMatch(message);
  expect(await listing(directory)).toEqual(before);
}

describe("a refused open leaves the directory unchanged", () => {
  it("a directory given as the store", async () => {
    const directory = await temporaryDirectory();
    await mkdir(join(directory, "agents"));
    await expectRefusedLeavingNothing(directory, { store: join(directory, "agents") }, "STORE", /is a directory, not a store file/);
  });

  it("a file that is not SQLite", async () => {
    const directory = await temporaryDirectory();
    await writeFile(join(directory, "notes.db"), "my notes\n".repeat(100));
    await expectRefusedLeavingNothing(directory, { store: join(directory, "notes.db") }, "STORE", /not a SQLite database/);
  });

  it("a SQLite database of another application", async () => {
    const directory = await temporaryDirectory();
    rawExec(join(directory, "inventory.db"), "CREATE TABLE products (sku TEXT PRIMARY KEY)");
    await expectRefusedLeavingNothing(
      directory,
      { store: join(directory, "inventory.db") },
      "STORE",
      /another application \(application_id 0, tables products\)/,
    );
  });

  it("a SQLite database in WAL mode stamped with another application_id", async () => {
    const directory = await temporaryDirectory();
    rawExec(join(directory, "other.db"), "PRAGMA journal_mode = WAL; PRAGMA application_id = 1234; CREATE TABLE t (x)");
    await expectRefusedLeavingNothing(directory, { store: join(directory, "other.db") }, "STORE", /another application \(application_id 1234\)/);
  });

  it("a store written by a newer Phronomy", async () => {
    const directory = await temporaryDirectory();
    const path = join(directory, "newer.db");
    await (await SqliteStore.open(path)).close();
    rawExec(path, `PRAGMA user_version = ${schemaVersion + 1}`);
    await expectRefusedLeavingNothing(directory, { store: path }, "STORE", /newer Phronomy/);
  });

  const badOptions: [string, Partial<OpenOptions>, RegExp][] = [
    ["offloadCapacity -5", { offloadCapacity: -5 }, /offloadCapacity must be a positive integer, got -5/],
    ["offloadCapacity 1.5", { offloadCapacity: 1.5 }, /offloadCapacity must be a positive integer/],
    ["synchronous OFF", { synchronous: "OFF" as never }, /synchronous must be "FULL" or "NORMAL"/],
    ["offloadPolicy sometimes", { offloadPolicy: "sometimes" as never }, /offloadPolicy must be/],
    ["limits.executionsMax -1", { limits: { executionsMax: -1 } }, /"executionsMax" must be an integer/],
    ["an unknown option", { colour: "red" } as never, /unknown option "colour"/],
  ];
  for (const [name, options, message] of badOptions) {
    it(`invalid options: ${name} (nothing created for a new store)`, async () => {
      const directory = await temporaryDirectory();
      await expectRefusedLeavingNothing(directory, { store: join(directory, "store.db"), ...options }, "INVALID_INPUT", message);
      expect(await readdir(directory)).toEqual([]);
    });
  }
});
