// Opening SQLite's in-memory database (":memory:", as the simulated stores
// of test/fuzz and test/sim do) creates no file: it used to leave an empty
// file named ":memory:" in the working directory (found by the whole-host
// simulation, docs/decisions/0063).

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { openSqlite } from "../../host/store/sqlite/driver.js";

it('opens ":memory:" without creating a file of that name', () => {
  const directory = mkdtempSync(join(tmpdir(), "phronomy-memory-"));
  const before = process.cwd();
  process.chdir(directory);
  try {
    const connection = openSqlite(":memory:");
    connection.exec("CREATE TABLE t (x)");
    connection.close();
    expect(existsSync(join(directory, ":memory:"))).toBe(false);
  } finally {
    process.chdir(before);
    rmSync(directory, { recursive: true, force: true });
  }
});
