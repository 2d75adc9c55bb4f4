// Lease settings and refusals on PostgreSQL (issue 7, docs/decisions/0010).
// Since issue 13 (docs/decisions/0030) processes lease partitions, not
// agents (`partitions.ts`, `partition-book.ts`); what stays here is the
// lease length, the admission fraction, the per-agent view the runtime
// sees (`LeaseGrant`, `LeaseAcquisition`) and the refusals it gives.
// The rules below are those of 0010; they hold per partition now.
//
// Rules kept here:
// * Acquisition is one statement: the lease row is inserted, or taken over
//   when it has expired (epoch + 1), or extended when this owner already
//   holds it unexpired (same epoch). A live lease of another owner is left
//   alone and reported (owner and expiry), never waited on.
// * Expiry is the database's clock (`clock_timestamp()`), so the processes'
//   clocks need not agree. Locally, a process stops admitting earlier: at
//   the time it *sent* the acquisition or renewal plus `admitFraction` of
//   the lease (the server's expiry is at least that late).
// * Renewal extends only the lease this owner holds at this epoch and not
//   yet expired: a renewal that finds it gone (taken over, or lapsed) is
//   lost, and the agent is acquired anew (new epoch) or not at all.
// * Releasing expires the row now but keeps it, so the epoch keeps growing
//   across owners.
// * `PostgresStore.fenceOf` gives the fence of every agent this process ever
//   asked for: the held one, or the last one it held (stale), or one no
//   lease can match — so a write for an agent it does not hold is refused
//   in the database, never let through unfenced.

import { InvalidInputError, PhronomyError } from "../../errors.js";

/** The lease a write must still hold: owner and epoch (docs/decisions/0009). */
export interface Fence {
  readonly owner: string;
  readonly epoch: number;
}

/** Lease length when neither the option nor `?lease_ms=` names one. */
export const leaseMsDefault = 5_000;
export const leaseMsMin = 100;
export const leaseMsMax = 600_000;

/** Part of the lease after which a process stops admitting for the agent
 * if it could not renew (renewals run every third of the lease). */
export const admitFraction = 5 / 6;

export interface LeaseGrant {
  readonly owner: string;
  readonly epoch: number;
  /** Server time, milliseconds since the epoch. */
  readonly expiresAt: number;
}

export type LeaseAcquisition =
  | ({
      readonly acquired: true /** The lease row was created now: nobody ever held the agent (nor wrote its journal). */;
      readonly created?: boolean;
    } & LeaseGrant)
  | { readonly acquired: false; readonly owner: string; readonly epoch: number; readonly expiresAt: number; readonly message: string };

/** Reads `lease_ms` out of a URL (and removes it); undefined when absent. */
export function leaseMsOfUrl(url: string): { url: string; leaseMs: number | undefined } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, leaseMs: undefined };
  }
  const text = parsed.searchParams.get("lease_ms");
  if (text === null) return { url, leaseMs: undefined };
  parsed.searchParams.delete("lease_ms");
  // Digits only: Number() would read "" as 0 and "abc" as NaN, and the
  // message must show what was given.
  const value = /^[0-9]{1,16}$/.test(text) ? Number(text) : text;
  checkLeaseMs(value, "?lease_ms=");
  return { url: parsed.toString(), leaseMs: value };
}

export function checkLeaseMs(value: unknown, what: string): asserts value is number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < leaseMsMin || value > leaseMsMax) {
    throw new InvalidInputError(
      `${what} (the lease length in milliseconds) must be an integer from ${leaseMsMin} to ${leaseMsMax}, got ${typeof value === "number" ? String(value) : JSON.stringify(value)}`,
    );
  }
}

/** Starting an execution of an agent this process does not own. */
export function agentOwnedElsewhere(agentId: string, why: string, details: Record<string, unknown>): PhronomyError {
  return new PhronomyError(
    "AGENT_BUSY",
    `agent "${agentId}" is not owned by this process: ${why}; start it on the process that owns it, or retry here after that lease expires (this process takes the agent over then)`,
    { agentId, details: { reason: "lease_not_held", ...details } },
  );
}

/** Starting an execution of an agent whose partition this process held
 * and saw lapse (the database away longer than the lease): nobody else
 * holds it, and this process takes it back at its next tick. Refused, not
 * filed for another process: there is none (docs/decisions/0058). */
export function partitionLapsedHere(agentId: string, partition: number, details: Record<string, unknown>, tickMs: number): PhronomyError {
  return new PhronomyError(
    "AGENT_BUSY",
    `agent "${agentId}" cannot start here just now: the lease of its partition ${partition} lapsed in this process (it could not be renewed `
      + `while the database was unreachable) and this process takes it back at its next lease tick (every ${tickMs} ms); `
      + "nothing was started — start it again shortly",
    { agentId, details: { reason: "lease_not_held", partition, ...details } },
  );
}
