// The disk settled before a measure whose rates wait on fsync (decision
// 0124): the page cache's dirty pages (/proc/meminfo Dirty and Writeback)
// written back by `sync` first, so that a measure does not wait behind an
// earlier section's writes. `npm run bench` calls it before Phronomy's
// PostgreSQL round and before each peer's round alike.

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** Dirty and Writeback in MB, or undefined where /proc/meminfo is not (not Linux). */
export function unwrittenMb(): { dirty: number; writeback: number } | undefined {
  let text: string;
  try {
    text = readFileSync("/proc/meminfo", "utf8");
  } catch {
    return undefined;
  }
  const mb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN) / 1024;
  return { dirty: mb("Dirty"), writeback: mb("Writeback") };
}

const describe = (pages: { dirty: number; writeback: number } | undefined) =>
  pages === undefined ? "not known" : `Dirty ${pages.dirty.toFixed(0)} MB, Writeback ${pages.writeback.toFixed(0)} MB`;

/** `sync`, then what it found and how long it took, for the bench's output. */
export function settleDisk(): string {
  const before = unwrittenMb();
  const began = performance.now();
  spawnSync("sync");
  const seconds = (performance.now() - began) / 1000;
  return `page cache not yet on disk ${describe(before)}; sync ${seconds.toFixed(1)} s; then ${describe(unwrittenMb())}`;
}
