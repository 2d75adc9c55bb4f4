// Where an operation by execution id goes when no conversation here can be
// asked (docs/decisions/0062, "By id"): `env.cancel` of an execution not
// live here, `env.admin.decide` for an agent not defined here, `env.retry`
// before its conversation's first use, `env.wait` of an execution running
// but not live here. The core decides (`byIdVerdict`: run here, file for
// the owner, or a refusal); this file only reads the facts — visitor, the
// store's lease of the conversation (here, another process's, nobody's),
// whether the store keeps the inbox, whether the conversation is here —
// and hands back the verdict with what carrying it out needs.

import { AdmissionSource, AdmissionVerdict, ByIdFact } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { PhronomyError } from "../errors.js";
import type { ExecutionStore } from "../store/store.js";
import { leasingStoreOf } from "./leases.js";
import type { RemoteResumes } from "./remote-resume.js";

/** The sources asked of `byIdVerdict`. */
export type ByIdSource = AdmissionSource.Resume | AdmissionSource.Retry | AdmissionSource.Cancel | AdmissionSource.Observe;

/** What the placement reads (the environment's parts). */
export interface ByIdPlacementHost {
  readonly store: ExecutionStore;
  readonly visitor: boolean;
  readonly core: Pick<ControlCore, "byIdVerdict">;
  /** The inbox that files work for the process holding a conversation;
   * undefined when the store keeps none. */
  inbox(): RemoteResumes | undefined;
}

/** The lease holder as the store reads it. */
export interface LeaseHolder {
  readonly owner: string;
  readonly expiresAt: number;
}

/** The core's verdict, and what carrying it out needs: the inbox to file
 * in (`FileForOwner`), the lease holder to name in a refusal. */
export interface ByIdPlacement {
  readonly verdict: AdmissionVerdict;
  readonly inbox: RemoteResumes | undefined;
  readonly holder: LeaseHolder | undefined;
}

/** Reads the facts of the conversation `agentId` and asks the core.
 * `conversationHere`: it is live here, or its agent (definition) is
 * defined here. The holder is read (one store read) only on a leasing
 * store whose lease of the conversation this process does not hold. */
export async function placeById(host: ByIdPlacementHost, source: ByIdSource, agentId: string, conversationHere: boolean): Promise<ByIdPlacement> {
  const leasing = leasingStoreOf(host.store);
  const heldHere = leasing?.leaseOf(agentId) !== undefined;
  const holder = leasing !== undefined && !heldHere ? await leasing.leaseHolder(agentId) : undefined;
  const inbox = host.inbox();
  let facts = 0;
  if (host.visitor) facts |= ByIdFact.Visitor;
  if (leasing !== undefined) facts |= ByIdFact.Leasing | (heldHere ? ByIdFact.LeaseHeldHere : holder !== undefined ? ByIdFact.LeaseHeldElsewhere : 0);
  if (inbox !== undefined) facts |= ByIdFact.InboxKept;
  if (conversationHere) facts |= ByIdFact.ConversationHere;
  const verdict = host.core.byIdVerdict(source, facts) as AdmissionVerdict;
  // Filed only with an inbox to file in (`InboxKept`): checked here once.
  // A wait is not filed: `FileForOwner` follows the row at its owner.
  const filed = verdict === AdmissionVerdict.FileForOwner && source !== AdmissionSource.Observe;
  if (verdict === AdmissionVerdict.None || (filed && inbox === undefined)) {
    throw new PhronomyError("INTERNAL", `the core answered placement ${verdict} for source ${source} and facts ${facts} of agent "${agentId}"`, { agentId });
  }
  return { verdict, inbox, holder };
}
