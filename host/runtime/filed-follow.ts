// The facts a filer reads of what it follows — a decision it filed for
// another process (remote-resume.ts), a start it filed (or an execution an
// `env.wait` follows there, remote-start.ts) — as the core's bits. What
// each read becomes (follow, announce a suspension, settle) is the core's
// (`filedDecisionVerdict`, `filedStartFollowVerdict`, docs/decisions/0110);
// the host reads, asks, and carries the verdict out.

import { FiledDecisionFact as D, FiledStartFollowFact as S } from "../../assembly/abi.js";
import type { DecisionState } from "../store/inbox-records.js";
import type { ExecutionRow } from "../store/records.js";
import type { StartProgress } from "../store/start-filing.js";

/** A decision's kind and state, and its execution's row as read
 * (`announcedRevision`: the last suspended revision the filer was told). */
export function filedDecisionFactsOf(
  kind: "approval" | "cancel" | "retry",
  state: DecisionState,
  row: ExecutionRow | undefined,
  announcedRevision: number,
): number {
  const kindBits = kind === "cancel" ? D.Cancel : kind === "retry" ? D.Retry : 0;
  const stateBits = state === "claimed" ? D.Claimed : state === "applied" ? D.Applied : state === "refused" ? D.Refused : 0;
  return kindBits | stateBits | rowFacts(row, announcedRevision, D.RowFound, D.RowTerminal, D.RowSuspended, D.SuspendedLater);
}

/** A followed start's progress as read; `observer`: followed by an
 * `env.wait`, not by the start's own Run. */
export function filedStartFollowFactsOf(
  observer: boolean,
  progress: Pick<StartProgress, "execution" | "decisionState" | "queued">,
  announcedRevision: number,
): number {
  let facts = observer ? S.Observer : 0;
  facts |= rowFacts(progress.execution, announcedRevision, S.RowFound, S.RowTerminal, S.RowSuspended, S.SuspendedLater);
  if (progress.decisionState !== undefined) facts |= S.Filed;
  if (progress.decisionState === "refused") facts |= S.Refused;
  if (progress.queued) facts |= S.Queued;
  return facts;
}

function rowFacts(row: ExecutionRow | undefined, announcedRevision: number, found: number, terminal: number, suspended: number, later: number): number {
  if (row === undefined) return 0;
  if (row.status === "terminal") return found | terminal;
  if (row.status === "suspended") return found | suspended | (row.revision > announcedRevision ? later : 0);
  return found;
}
