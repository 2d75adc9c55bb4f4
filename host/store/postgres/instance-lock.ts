// The instance id a store process holds partitions under, and the session
// lock that proves the process holding it is alive (docs/decisions/0030).
//
// Rules kept here:
// * A process holds `pg_advisory_lock(instance class, hashtext(schema:id))`
//   on a connection of its own for as long as it is open. PostgreSQL drops
//   a session's locks when its connection closes — at once when the process
//   dies (kill -9: the kernel closes the socket) — so a process that gets
//   the lock knows no live process uses the id, and may reclaim the id's
//   partitions at once instead of waiting for them to expire.
// * A process stopped without dying (SIGSTOP, a long pause) keeps the lock:
//   its id is refused to a newcomer, whose partitions come by expiry.
// * The default id is the host name (a restarted container usually keeps
//   it); when a live process on the same host holds it, `host:pid`, then
//   `host:pid:n`. An id given explicitly and held is refused (`StoreError`).

import { hostname } from "node:os";
import pg from "pg";
import { InvalidInputError, StoreError } from "../../errors.js";

/** Second advisory-lock class of the store: "PHRI" in ASCII. */
const instanceLockClass = 0x50485249;

/** Fallback ids tried after `host` and `host:pid` (the same host runs that
 * many store processes of one schema at most under the default id). */
const fallbackIdsMax = 64;

export const instanceIdLengthMax = 200;

export class InstanceLock {
  private lost = false;

  private constructor(
    readonly instanceId: string,
    private readonly client: pg.Client,
  ) {
    client.on("error", () => {
      this.lost = true;
    });
    client.on("end", () => {
      this.lost = true;
    });
  }

  /** The lock's own connection, for the partition tick: a renewal never
   * waits behind the pool's writes (the per-agent renewals of 0010 did, and
   * fell behind). Undefined once the connection was lost. */
  get session(): pg.Client | undefined {
    return this.lost ? undefined : this.client;
  }

  /** Takes the lock of `instanceId`, or of the first free default id. */
  static async take(config: pg.ClientConfig, schema: string, instanceId: string | undefined, where: string): Promise<InstanceLock> {
    const client = new pg.Client(config);
    // A lost lock connection must not crash the process: fencing keeps the
    // partitions safe if another process reclaims the id meanwhile.
    client.on("error", () => undefined);
    await client.connect();
    try {
      const candidates = instanceId !== undefined ? [instanceId] : defaultIds();
      for (const candidate of candidates) {
        const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked", [
          instanceLockClass,
          `${schema}:${candidate}`,
        ]);
        if (rows[0]?.locked === true) return new InstanceLock(candidate, client);
      }
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    await client.end().catch(() => undefined);
    throw new StoreError(
      `${where}: instanceId "${instanceId ?? hostname()}" is in use by a live process of this store (it holds the instance's session lock); give each live process its own instanceId`,
      { details: { instanceId } },
    );
  }

  /** Ends the session: the lock goes with it. */
  async release(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}

function defaultIds(): string[] {
  const host = hostname();
  return [host, `${host}:${process.pid}`, ...Array.from({ length: fallbackIdsMax }, (_, n) => `${host}:${process.pid}:${n + 1}`)];
}

export function checkInstanceId(value: unknown, what: string): asserts value is string {
  if (typeof value !== "string" || value.length === 0 || value.length > instanceIdLengthMax) {
    throw new InvalidInputError(`${what} must be a non-empty string of at most ${instanceIdLengthMax} characters, got ${JSON.stringify(value)}`);
  }
}
