// What became of a start filed for this process (docs/decisions/0031,
// 0062): its fate in the inbox is the core's (`filedStartVerdict`,
// docs/decisions/0096), from its last `Admit` verdict on it, the start's
// answer (`startAnswerOf`) and, for a busy refusal, whether this process
// admitted its execution id itself. The core answers run (`Ran`), left for
// the next owner or the process that holds the conversation (`Left`), its
// write tried again (`WriteFailed`: what only the store can answer — a
// write the store failed or refused for this process's lease — is tried
// again while the partition may still be held at the claim's epoch,
// approval-inbox.ts), or refused. The host reads the facts and carries the
// verdict out.

import { AdmissionVerdict, FiledStartFact, FiledStartVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import type { PhronomyError } from "../errors.js";
import { startAnswerOf } from "./start-answer.js";
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
 * busy refusal by the admission of this very id: it runs), read only when
 * the core asks it. */
export async function fateOfRefused(
  core: Pick<ControlCore, "filedStartVerdict">,
  refusal: PhronomyError,
  verdict: AdmissionVerdict | undefined,
  admittedAs: () => Promise<boolean>,
): Promise<FiledStartFate> {
  const answer = startAnswerOf(refusal);
  const facts = verdict === AdmissionVerdict.LeaveFiled ? FiledStartFact.LeftFiled : 0;
  let fate = core.filedStartVerdict(answer, facts) as FiledStartVerdict;
  if (fate === FiledStartVerdict.AskAdmitted) {
    const admitted = await admittedAs().catch(() => false);
    fate = core.filedStartVerdict(answer, facts | FiledStartFact.AdmittedRead | (admitted ? FiledStartFact.AdmittedHere : 0)) as FiledStartVerdict;
  }
  switch (fate) {
    case FiledStartVerdict.Ran:
      return ran;
    case FiledStartVerdict.Left:
      return left;
    case FiledStartVerdict.WriteFailed:
      return { kind: "write_failed", error: refusal };
    case FiledStartVerdict.Refused:
      return { kind: "refused", error: refusal };
    default:
      // The host passes its own facts: a verdict of none is a broken assertion.
      throw new Error(`the core answered no fate for a filed start refused ${refusal.code} (answer ${answer}, facts ${facts})`);
  }
}
