// One conversation (docs/decisions/0083): its executions, oldest first, as
// one transcript with their tool calls, approvals, waits and queued
// messages inline; a wait pending in it with its decision form; and a
// field to send the next message, when this process has its definition.

import type { AdminDefinition, Environment } from "../index.js";
import { approvalCard } from "./decision-card.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";
import { actionForm } from "./pieces.js";
import { definitionOf, transcriptOf } from "./transcript.js";

/** Executions of a conversation the page shows (the newest). */
export const conversationShownMax = 30;

export async function conversationLive(environment: Environment, links: Links, agentId: string): Promise<Html> {
  const admin = environment.admin;
  const [rows, approvals] = await Promise.all([admin.executions({ agentId, limit: conversationShownMax }), admin.approvals()]);
  const ordered = [...rows].reverse();
  const timelines = await Promise.all(ordered.map((row) => (row.status === "queued" ? Promise.resolve([]) : admin.timeline(row.executionId))));
  const pending = approvals.filter((approval) => approval.agentId === agentId);
  const definition = rows.map(definitionOf).find((name) => name !== undefined);
  const exchanges = ordered.map((row, index) => {
    const approval = pending.find((candidate) => candidate.executionId === row.executionId);
    return transcriptOf(
      links,
      row,
      timelines[index]!,
      approval === undefined ? undefined : approvalCard(links, approval, undefined, `/conversations/${encodeURIComponent(agentId)}`),
    );
  });
  const note = rows.length >= conversationShownMax ? html`<p class="muted small">The newest ${String(conversationShownMax)} executions.</p>` : "";
  return html`<section class="conversation-head">
      <h1>${definition !== undefined ? html`<b class="definition">${definition}</b> · ` : ""}conversation <code>${agentId}</code></h1>
    </section>
    ${note}
    <ol class="transcript">${rows.length === 0 ? html`<li class="muted">Nothing said in this conversation yet.</li>` : exchanges}</ol>
    ${sendForm(links, admin.definitions(), definition ?? agentId, agentId)}`;
}

function sendForm(links: Links, definitions: readonly AdminDefinition[], definition: string, conversationId: string): Html {
  const defined = definitions.find((candidate) => candidate.name === definition);
  if (defined === undefined) {
    return html`<p class="muted small" id="send">This process does not define <code>${definition}</code>: send messages to it from a process that does (mount the dashboard in the application with <code>createDashboard(env)</code>).</p>`;
  }
  return html`<section id="send">${actionForm(
    links,
    "start",
    { definition, conversationId },
    html`<label>Message <textarea name="message" rows="2" required maxlength="20000" data-keep="message-${conversationId}" placeholder="Write to ${definition}…"></textarea></label> <button type="submit" class="approve">Send</button>`,
    "talk",
  )}</section>`;
}

/** The page to start a conversation from: one of the definitions here. */
export function talkPage(links: Links, definitions: readonly AdminDefinition[]): Html {
  if (definitions.length === 0) {
    return html`<h1>Talk to an agent</h1><p class="muted">This process defines no agent: open the dashboard in the application that defines them (<code>createDashboard(env)</code>), where a message runs, queues or is filed for the process holding the conversation as any start is.</p>`;
  }
  const options = definitions.map(
    (definition) => html`<option value="${definition.name}">${definition.name}${definition.kind === "agent" ? " (one conversation)" : ""}</option>`,
  );
  return html`<h1>Talk to an agent</h1>
    <section id="talk">${actionForm(
      links,
      "start",
      {},
      html`<label>Agent <select name="definition" data-keep="talk-definition">${options}</select></label>
      <label>Conversation <input type="text" name="conversationId" placeholder="a new one" maxlength="200" data-keep="talk-conversation"></label>
      <label class="wide">Message <textarea name="message" rows="3" required maxlength="20000" data-keep="talk-message"></textarea></label>
      <button type="submit" class="approve">Send</button>`,
      "talk",
    )}</section>`;
}
