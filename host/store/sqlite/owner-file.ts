// `<store>-owner.json`, the information file an owner of a SQLite store
// writes beside it (`ownership.ts` takes the lock and writes it): who owns
// the store, read back by a refused opener, a visitor and `Admin.owner()`.
// Kept apart from the lock so that reading it loads no SQLite module: the
// runtime's `Admin` imports it, and a PostgreSQL application does not load
// the SQLite store (docs/decisions/0054).

import { hostname } from "node:os";
import { readFileSync } from "node:fs";

/** Who owns a store, as written in `<store>-owner.json`. */
export interface StoreOwner {
  /** The owning process's id. */
  readonly pid: number;
  /** The machine it runs on. */
  readonly hostname: string;
  /** When the owner took the lock (ISO 8601). */
  readonly startedAt: string;
}

export function ownerInfoPath(storePath: string): string {
  return `${storePath}-owner.json`;
}

/** Deno asks for a permission (`--allow-sys=hostname`) before it tells the
 * host name, and prompts for it on a terminal. The name is informative only
 * (it goes into messages), so without the permission the owner is named
 * without it rather than the store failing to open or prompting. */
const unknownHostName = "an unknown host (Deno without --allow-sys=hostname)";

interface DenoPermissions {
  readonly permissions: { querySync(descriptor: { readonly name: "sys"; readonly kind: "hostname" }): { readonly state: string } };
}

/** This machine's name for messages and records (the owner file, a
 * visitor's `filedBy`), without asking Deno for a permission. */
export function hostName(): string {
  const deno = (globalThis as { Deno?: DenoPermissions }).Deno;
  if (deno !== undefined && deno.permissions.querySync({ name: "sys", kind: "hostname" }).state !== "granted") return unknownHostName;
  return hostname();
}

/** The owner as its information file names it, if readable. */
export function readOwner(storePath: string): StoreOwner | undefined {
  try {
    const value = JSON.parse(readFileSync(ownerInfoPath(storePath), "utf8")) as Partial<StoreOwner> | null;
    if (typeof value?.pid !== "number" || typeof value.hostname !== "string" || typeof value.startedAt !== "string") return undefined;
    return { pid: value.pid, hostname: value.hostname, startedAt: value.startedAt };
  } catch {
    return undefined;
  }
}
