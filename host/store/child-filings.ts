// What a terminal commit files in the approval inbox for the executions
// linked to it (docs/decisions/0079), decided from the row it replaces and
// the outcome it writes, the same for both stores:
// * a child's end (any outcome but `suspended`) is filed for its parent's
//   wait (`config.parent`): a decision whose answer is the child's outcome,
//   under an id fixed by the child's (filed once); the parent's owner
//   claims it and resumes the parent through its normal resume path;
// * a parent that ends while it waits for a child (its cancel, a failure)
//   files a cancel of that child: the child's owner cancels it, and so on
//   down the tree.
// Filed in the terminal commit's own transaction, so a crash between the
// child's end and the parent's resume (or the parent's end and the child's
// cancel) loses neither.

import type { Json, StoredError, TerminalCommitOperation } from "./records.js";
import type { ExecutionMetadata } from "./records.js";
import { parentLinkOf, type ParentLink } from "./parent-link.js";
import { cancelApprovalId } from "./cancel-filing.js";

/** The child's end as the parent's call gets it (the decision's value). */
export interface ChildOutcome {
  readonly executionId: string;
  readonly outcome: string;
  readonly output?: Json;
  readonly error?: StoredError;
}

/** The child's end, from its terminal commit's outcome and error. */
export function childOutcomeOf(executionId: string, outcome: string, output: Json, error: StoredError | null): ChildOutcome {
  if (outcome === "completed") return { executionId, outcome, output };
  return {
    executionId,
    outcome,
    error: error ?? { code: "INTERNAL", message: `child execution ${executionId} ended ${outcome} without a recorded error` },
  };
}

/** The inbox filing a child's end makes for its parent (both stores):
 * a decision of kind `approval` whose answer is the child's outcome. Its
 * id is fixed by the child's, so it is filed once. */
export function childEndFiling(link: ParentLink, childOutcome: ChildOutcome, at: number) {
  return {
    decisionId: `child:${childOutcome.executionId}`,
    executionId: link.executionId,
    agentId: link.agentId,
    approvalId: link.waitId,
    approved: true,
    reason: null,
    action: { given: { kind: "child", callId: link.callId, payload: childOutcome as unknown as Json } } as Json,
    filedAt: at,
  };
}

/** The inbox rows a terminal commit files, from the row it replaces. */
export interface ChildFilings {
  /** The child's end, for its parent's wait. */
  readonly parentEnd?: ReturnType<typeof childEndFiling>;
  /** The cancel of the child the ending parent waited on. */
  readonly childCancel?: {
    readonly decisionId: string;
    readonly executionId: string;
    readonly approvalId: string;
    readonly reason: string;
    readonly filedAt: number;
  };
}

/** What the terminal commit of `executionId` files, given the row it
 * replaces (its metadata and pending request) and what it writes. */
export function childFilingsOf(
  current: { readonly metadata: ExecutionMetadata; readonly approvalRequest: Json },
  operation: TerminalCommitOperation,
): ChildFilings {
  if (operation.outcome === "suspended") return {};
  const filings: { parentEnd?: ChildFilings["parentEnd"]; childCancel?: ChildFilings["childCancel"] } = {};
  const parent = current.metadata.config?.["parent"];
  if (parent !== undefined) {
    const link = parentLinkOf(parent, `execution ${operation.executionId}`);
    filings.parentEnd = childEndFiling(link, childOutcomeOf(operation.executionId, operation.outcome, operation.output, operation.error), operation.at);
  }
  const request = current.approvalRequest as { kind?: unknown; decision?: unknown; child?: { executionId?: unknown } } | null;
  const childId = request?.child?.executionId;
  if (request?.kind === "child" && request.decision === undefined && typeof childId === "string") {
    const decisionId = `parent-ended:${childId}`;
    filings.childCancel = {
      decisionId,
      executionId: childId,
      approvalId: cancelApprovalId(decisionId),
      reason: `its parent execution ${operation.executionId} ended ${operation.error?.code === "CANCELLED" ? "cancelled" : operation.outcome} while it ran`,
      filedAt: operation.at,
    };
  }
  return filings;
}
