// The keyed-signal table's records (docs/decisions/0077): what `env.signal`
// asks a store, and what the store answers. Both stores keep one row per
// key in `event_signals` for a signal sent before any wait had its key;
// the wait that commits with the key takes it (`takeStoredSignal`).
//
// Rules kept by every store:
// * `sendSignal` looks for a suspended event wait with the key and, if
//   none, stores the signal, in one transaction serialized with
//   `takeStoredSignal` on the same key (SQLite: one writer; PostgreSQL: a
//   transaction lock on the key). So a signal and a wait committed at the
//   same moment always meet: either the signal finds the wait, or the
//   wait's owner, looking after its commit, finds the signal.
// * A stored signal is offered to one wait (`offered_to` its approval id):
//   offered again to the same wait (a recovery), never to another; a row
//   offered to a wait is spent for `sendSignal`, which replaces it.
// * Expired rows are deleted a few at a time by each `sendSignal`.

import type { Json } from "./records.js";
import type { ApprovalRequestRow } from "./signal-lookup.js";

/** What `env.signal` sends. */
export interface SignalSending {
  readonly key: string;
  readonly payload: Json;
  readonly at: number;
  /** Until when a signal no wait takes yet is kept (ms since the epoch). */
  readonly keepUntil: number;
  /** Refuse (`not_waiting`) rather than store when no wait has the key. */
  readonly ifWaiting: boolean;
}

/** What the store did with a signal: found its wait (the caller resumes
 * it), or stored it for the next wait with the key. A refusal is thrown
 * (`SignalRefusedError`). */
export type SignalSent = { readonly kind: "waiting"; readonly wait: ApprovalRequestRow } | { readonly kind: "stored"; readonly keptUntil: number };

/** Expired signals one `sendSignal` deletes at most: each send does a
 * little of the sweeping, so no timer is needed and no send is slow. */
export const expiredSignalsSweptMax = 16;

/** The store side of keyed signals. */
export interface SignalStore {
  sendSignal(sending: SignalSending): Promise<SignalSent>;
  /** The signal stored for `key`, if one is there for this wait
   * (`approvalId`), now marked offered to it. */
  takeStoredSignal(key: string, approvalId: string, at: number): Promise<Json | undefined>;
  /** Deletes the signal offered to the wait (it was consumed or refused). */
  dropSignal(key: string, approvalId: string): Promise<void>;
}
