// Where an operation by execution id goes when no conversation here can be
// asked (docs/decisions/0062, "By id"): `env.cancel` of an execution not
// live here, `env.admin.decide` for an agent not defined here, `env.retry`
// before its conversation's first use, `env.wait` of an execution running
// but not live here. No conversation slot is involved: the verdict is a
// pure function of the facts the host read (visitor, the store's lease,
// its inbox, whether the conversation is here), answered in the admission's
// verdicts — run here, file for the owner, or a refusal. Exported so the
// table test walks every source and fact.

import { AdmissionSource, AdmissionVerdict, ByIdFact } from "../abi";

/** The verdict, or `None` for an unknown source or facts that cannot hold
 * together (a lease held without leases, or held both here and elsewhere). */
export function byIdVerdictOf(source: u32, facts: u32): u32 {
  if (!factsConsistent(facts)) return AdmissionVerdict.None;
  switch (source) {
    case AdmissionSource.Observe: return ownedElsewhere(facts) ? AdmissionVerdict.FileForOwner : AdmissionVerdict.RunHere;
    case AdmissionSource.Cancel: return cancelVerdict(facts);
    case AdmissionSource.Resume: return decisionVerdict(facts);
    case AdmissionSource.Retry: return retryVerdict(facts);
    default: return AdmissionVerdict.None;
  }
}

// -- inside -----------------------------------------------------------------

function factsConsistent(facts: u32): bool {
  if (facts >= <u32>ByIdFact.End) return false;
  const held = facts & (ByIdFact.LeaseHeldHere | ByIdFact.LeaseHeldElsewhere);
  if (held != 0 && !has(facts, ByIdFact.Leasing)) return false;
  return held != (ByIdFact.LeaseHeldHere | ByIdFact.LeaseHeldElsewhere);
}

/** Another process runs the conversation: this is a visitor, or the store
 * leases conversations and this process does not hold its lease. */
function ownedElsewhere(facts: u32): bool {
  if (has(facts, ByIdFact.Visitor)) return true;
  return has(facts, ByIdFact.Leasing) && !has(facts, ByIdFact.LeaseHeldHere);
}

/** A cancel goes to the owner through the inbox; here, an execution whose
 * conversation is this process's but which is not live waits for its
 * recovery to install it; one nothing here will ever run (its agent not
 * defined here, its process gone) is ended here, its terminal written. */
function cancelVerdict(facts: u32): u32 {
  if (ownedElsewhere(facts) && has(facts, ByIdFact.InboxKept)) return AdmissionVerdict.FileForOwner;
  return has(facts, ByIdFact.ConversationHere) ? AdmissionVerdict.RefuseNotInstalled : AdmissionVerdict.RunHere;
}

/** A decision on an agent defined here is that agent's `resume` (the core
 * places it from the conversation's phase); else it goes to the owner
 * through the inbox, or is refused: this process owns it but cannot run it. */
function decisionVerdict(facts: u32): u32 {
  if (has(facts, ByIdFact.ConversationHere)) return AdmissionVerdict.RunHere;
  if (ownedElsewhere(facts) && has(facts, ByIdFact.InboxKept)) return AdmissionVerdict.FileForOwner;
  return AdmissionVerdict.RefuseNotDefined;
}

/** A visitor files a retry when it can (else tries here, as before); on a
 * leasing store, a retry of a conversation held elsewhere is filed for its
 * holder — nobody holding it, or no inbox, refuses it: nobody would claim
 * it. Here, the agent's definition runs the new attempt. */
function retryVerdict(facts: u32): u32 {
  const inbox = has(facts, ByIdFact.InboxKept);
  if (has(facts, ByIdFact.Visitor) && inbox) return AdmissionVerdict.FileForOwner;
  if (!has(facts, ByIdFact.Visitor) && ownedElsewhere(facts)) {
    return has(facts, ByIdFact.LeaseHeldElsewhere) && inbox ? AdmissionVerdict.FileForOwner : AdmissionVerdict.RefuseOwnedElsewhere;
  }
  return has(facts, ByIdFact.ConversationHere) ? AdmissionVerdict.RunHere : AdmissionVerdict.RefuseNotDefined;
}

function has(facts: u32, fact: u32): bool {
  return (facts & fact) != 0;
}
