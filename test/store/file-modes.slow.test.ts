// Store files are the owner's only (issue 11, Security): executions hold
// every conversation, so `store.db`, its `-wal` and `-shm`, the lock file
// `-owner` and `-owner.json` are created 0600 and the CLI's store directory
// 0700, whatever the umask lets through (022 here, which used to leave them
// world-readable). Checked on Node, Bun and Deno, each with its own SQLite.

import { statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveStore } from "../../host/cli/store.js";
import { repositoryRoot, runChild, type ChildExit } from "../support/child-process.js";
import { childNodeFlags } from "../support/node-flags.js";
import { temporaryDirectory } from "./fixtures.js";

const childScript = fileURLToPath(new URL("./fixtures/file-modes-child.ts", import.meta.url));
const bin = join(repositoryRoot, "node_modules", ".bin");

const runtimes = {
  node: { command: process.execPath, arguments: [...childNodeFlags, "--import", "tsx"], driver: "better-sqlite3" },
  bun: { command: join(bin, "bun"), arguments: [], driver: "bun:sqlite" },
  deno: { command: join(bin, "deno"), arguments: ["run", "--allow-read", "--allow-write", "--sloppy-imports"], driver: "node:sqlite" },
} as const;

let umaskBefore: number;
beforeAll(() => {
  umaskBefore = process.umask(0o022);
});
afterAll(() => {
  process.umask(umaskBefore);
});

function runModesChild(runtime: keyof typeof runtimes, path: string): Promise<ChildExit> {
  return runChild(childScript, [path], { ...runtimes[runtime], env: { ...process.env, NO_COLOR: "1" } });
}

describe("store files are created owner-only under umask 022", () => {
  for (const runtime of Object.keys(runtimes) as (keyof typeof runtimes)[]) {
    it(`on ${runtime}: store.db, -wal, -shm, -owner and -owner.json are 0600`, async () => {
      const path = join(await temporaryDirectory(), "store.db");
      const exit = await runModesChild(runtime, path);
      expect(exit.code, exit.stderr).toBe(0);
      expect(JSON.parse(exit.stdout)).toEqual({
        driver: runtimes[runtime].driver,
        modes: { "store.db": "600", "store.db-wal": "600", "store.db-shm": "600", "store.db-owner": "600", "store.db-owner.json": "600" },
      });
      // After close: the lock file stays (never deleted), still owner-only.
      expect((statSync(`${path}-owner`).mode & 0o777).toString(8)).toBe("600");
    });
  }

  it("the CLI creates the store's directory (./.phronomy) 0700", async () => {
    const directory = await temporaryDirectory();
    const location = resolveStore(join(directory, ".phronomy", "store.db"), { mustExist: false });
    expect(location.path).toBe(join(directory, ".phronomy", "store.db"));
    expect((statSync(join(directory, ".phronomy")).mode & 0o777).toString(8)).toBe("700");
  });
});
