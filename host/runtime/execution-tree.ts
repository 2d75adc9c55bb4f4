// The tree of executions an `agentTool()` call makes (docs/decisions/0079):
// an execution's parent is stored with it (`config.parent`), its children
// are named by the `child` waits on its timeline (one per call that ran a
// child). Read from the store, so any process sharing it sees the tree;
// bounded, so a runaway recursion cannot make one read unbounded.

import type { ExecutionRow, StoredStep } from "../store/records.js";
import { parentOfRow } from "./child-waits.js";

/** Executions one tree read returns at most (an agent calling itself as a
 * tool can nest without end): deeper or wider is cut, `truncated` says so. */
export const executionTreeSizeMax = 1_000;

/** An execution with its parent and its children, as `env.executionTree` gives it. */
export interface ExecutionTree {
  readonly execution: ExecutionRow;
  /** The parent's execution, conversation and call, for a child. */
  readonly parent?: { readonly executionId: string; readonly agentId: string; readonly callId: string };
  /** Its children, in the order it started them (absent once pruned). */
  readonly children: readonly ExecutionTree[];
  /** Set when children were left out past `executionTreeSizeMax`. */
  readonly truncated?: true;
}

/** What reading a tree needs. */
export interface TreeReads {
  execution(executionId: string): Promise<ExecutionRow | undefined>;
  timeline(executionId: string): Promise<readonly StoredStep[]>;
}

/** The tree under `executionId` (undefined: no such execution). */
export async function executionTreeOf(reads: TreeReads, executionId: string): Promise<ExecutionTree | undefined> {
  const budget = { left: executionTreeSizeMax };
  return treeOf(reads, executionId, budget);
}

async function treeOf(reads: TreeReads, executionId: string, budget: { left: number }): Promise<ExecutionTree | undefined> {
  const execution = await reads.execution(executionId);
  if (execution === undefined) return undefined;
  budget.left -= 1;
  const parent = parentOfRow(execution);
  const children: ExecutionTree[] = [];
  let truncated = false;
  for (const childId of childIdsOf(await reads.timeline(executionId))) {
    if (budget.left <= 0) {
      truncated = true;
      break;
    }
    const child = await treeOf(reads, childId, budget);
    if (child !== undefined) children.push(child);
  }
  return { execution, ...(parent !== undefined ? { parent } : {}), children, ...(truncated ? { truncated: true as const } : {}) };
}

/** The children the timeline's `child` waits name, once each, in order. */
function childIdsOf(steps: readonly StoredStep[]): string[] {
  const ids: string[] = [];
  for (const step of steps) {
    if (step.kind !== "approval_requested") continue;
    const request = (step.payload as { approvalRequest?: { kind?: unknown; child?: { executionId?: unknown } } } | null)?.approvalRequest;
    const id = request?.kind === "child" ? request.child?.executionId : undefined;
    if (typeof id === "string" && !ids.includes(id)) ids.push(id);
  }
  return ids;
}
