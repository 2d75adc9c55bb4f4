// The tree of child executions `show` draws (docs/decisions/0079, 0088):
// the execution's parent, then each child an `agentTool()` call started,
// with its state, nested as `env.executionTree` reads it.

import pc from "./colors.js";
import type { ExecutionTree } from "../index.js";
import { colorState, stateOf } from "./format.js";

/** The tree as lines, or none for an execution with no parent and no child. */
export function treeLines(tree: ExecutionTree): string[] {
  if (tree.parent === undefined && tree.children.length === 0) return [];
  const lines: string[] = [];
  if (tree.parent !== undefined) {
    lines.push(`${pc.dim("parent".padEnd(10))}${tree.parent.executionId} · agent "${tree.parent.agentId}" · call ${tree.parent.callId}`);
  }
  if (tree.children.length > 0) {
    lines.push(`${pc.dim("children".padEnd(10))}${tree.children.length} (agentTool calls)`);
    lines.push(...childLines(tree, "  "));
  }
  return lines;
}

function childLines(tree: ExecutionTree, indent: string): string[] {
  const lines: string[] = [];
  tree.children.forEach((child, index) => {
    const last = index === tree.children.length - 1 && tree.truncated !== true;
    const row = child.execution;
    lines.push(`${indent}${last ? "└─" : "├─"} ${row.executionId} · agent "${row.agentId}" · ${colorState(stateOf(row))}`);
    lines.push(...childLines(child, `${indent}${last ? "   " : "│  "}`));
  });
  if (tree.truncated === true) lines.push(`${indent}└─ … (more children: the tree read stops at 1,000 executions)`);
  return lines;
}

/** The tree as `show --json` prints it: ids, agents and states, nested. */
export function treeJson(tree: ExecutionTree): Record<string, unknown> {
  return {
    parent: tree.parent ?? null,
    children: tree.children.map((child) => ({
      executionId: child.execution.executionId,
      agentId: child.execution.agentId,
      state: stateOf(child.execution),
      ...treeJson(child),
      parent: undefined,
    })),
    ...(tree.truncated === true ? { truncated: true } : {}),
  };
}
