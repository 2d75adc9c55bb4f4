// What became of a start filed for this process (docs/decisions/0031,
// 0062): its fate in the inbox follows the core's last `Admit` verdict on
// it, not the class of the error its Run was refused with. The core
// answers run here (`RunHere`), wait for the conversation's recovery
// (`WaitUntilReady`: it waited, as a start made here does, and was asked
// again), leave it for the process that holds the conversation
// (`LeaveFiled`), or refuse it. What only the store can answer stays the
// host's: a write the store failed or refused for this process's lease is
// I/O, tried again while the partition may still be held at the claim's
// epoch (approval-inbox.ts).

import { AdmissionVerdict } from "../../assembly/abi.js";
import { CoreFailureError, type PhronomyError, RuntimeShutdownError } from "../errors.js";
import { isExecutionExists } from "./error-codes.js";

/** A filed start's fate: run (or admitted under its id already), left for
 * the next owner, refused for good (recorded), or its write not answered
 * (the store failed, or refused it for the lease: tried again). */
export type FiledStartFate =
  | { readonly kind: "ran" }
  | { readonly kind: "left" }
  | { readonly kind: "refused"; readonly error: PhronomyError }
  | { readonly kind: "write_failed"; readonly error: PhronomyError };

export const ran: FiledStartFate = { kind: "ran" };
export const left: FiledStartFate = { kind: "left" };

/** The fate of a filed start its Run was refused with `refusal`, after the
 * core's last verdict on it (undefined: refused before `Admit` answered).
 * `admittedAs`: whether this process admitted its execution id already (a
 * busy refusal by the admission of this very id: it runs). */
export async function fateOfRefused(
  refusal: PhronomyError,
  verdict: AdmissionVerdict | undefined,
  admittedAs: () => Promise<boolean>,
): Promise<FiledStartFate> {
  // A former owner admitted it: its recovery finishes it.
  if (isExecutionExists(refusal)) return ran;
  // Shut down, or its core failed (decision 0023): the next owner's.
  if (refusal instanceof RuntimeShutdownError || refusal instanceof CoreFailureError) return left;
  // The core: owned elsewhere, so the start stays filed for its owner.
  if (verdict === AdmissionVerdict.LeaveFiled) return left;
  // The store's answer to the write: it failed, or its lease check refused
  // it (the core said run here; the lease settles in the store).
  if (refusal.code === "STORE" || (refusal.code === "AGENT_BUSY" && refusal.details?.["reason"] === "lease_not_held")) {
    return { kind: "write_failed", error: refusal };
  }
  // Busy with this very id (its key started here meanwhile, maybe still
  // being prepared): it runs (docs/decisions/0057).
  if (refusal.code === "AGENT_BUSY" && (await admittedAs().catch(() => false))) return ran;
  return { kind: "refused", error: refusal };
}
