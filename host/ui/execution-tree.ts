// The tree of child executions on an execution's page (docs/decisions/0079,
// 0088): its parent, linked, and the children its `agentTool()` calls
// started, nested, each with its state and a link — read through
// `env.executionTree`. An execution with neither (most) costs no read: the
// page looks for a parent in the row and for child waits in the timeline
// it has already read.

import type { Environment, ExecutionRow, ExecutionTree, StoredStep } from "../index.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";
import { badge } from "./pieces.js";

export async function treeSection(environment: Environment, links: Links, row: ExecutionRow, timeline: readonly StoredStep[]): Promise<Html | ""> {
  if (!hasParent(row) && !timeline.some(startsChild)) return "";
  const tree = await environment.executionTree(row.executionId);
  if (tree === undefined || (tree.parent === undefined && tree.children.length === 0)) return "";
  const parent =
    tree.parent !== undefined
      ? html`<p id="parent">Started by <a href="${links.execution(tree.parent.executionId)}"><code>${tree.parent.executionId}</code></a> <span class="muted small">(conversation ${tree.parent.agentId}, call ${tree.parent.callId})</span></p>`
      : "";
  const children = tree.children.length > 0 ? html`<h3>Children</h3>${childList(links, tree)}` : "";
  return html`<section id="tree"><h2>Child executions</h2>${parent}${children}</section>`;
}

function childList(links: Links, tree: ExecutionTree): Html {
  return html`<ul class="tree">${tree.children.map(
    (child) =>
      html`<li data-execution="${child.execution.executionId}"><a href="${links.execution(child.execution.executionId)}"><code>${child.execution.executionId}</code></a> ${badge(child.execution)} <span class="muted small">${child.execution.agentId}</span>${child.children.length > 0 ? childList(links, child) : ""}</li>`,
  )}${tree.truncated === true ? html`<li class="muted">… more (a tree read stops at 1,000 executions)</li>` : ""}</ul>`;
}

function hasParent(row: ExecutionRow): boolean {
  const config = (row.metadata as { config?: { parent?: unknown } } | undefined)?.config;
  return config?.parent !== undefined && config.parent !== null;
}

function startsChild(step: StoredStep): boolean {
  if (step.kind !== "approval_requested") return false;
  const request = (step.payload as { approvalRequest?: { kind?: unknown } } | null)?.approvalRequest;
  return request?.kind === "child";
}
