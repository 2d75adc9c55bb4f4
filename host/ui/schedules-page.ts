// Scheduled starts in the dashboard (docs/decisions/0078, 0088): the list
// (timing, next run, last firing), one schedule's page, and the
// confirmation step of a cancel or a run-now — a GET that does nothing and
// shows exactly the schedule the POST acts on, as the bulk page does.
// Read and acted on through `env.schedules`, `env.schedule`,
// `env.cancelSchedule` and `env.runSchedule` (`schedule-actions.ts`); a
// visitor reads and acts on them too; a run now it asks is started by the
// owner (docs/decisions/0097), as the page says.

import type { Environment, Schedule } from "../index.js";
import { compactJson, formatTime } from "./format.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";
import { actionForm, jsonBlock } from "./pieces.js";

/** Schedules one list shows: the newest ones (the API's bound is 1,000). */
export const schedulesShownMax = 200;

const states = ["active", "cancelled", "done"] as const;

export async function schedulesLive(environment: Environment, links: Links, params: URLSearchParams): Promise<Html> {
  const state = params.get("state");
  const chosen = states.find((candidate) => candidate === state);
  const rows = await environment.schedules({ limit: schedulesShownMax, ...(chosen !== undefined ? { state: chosen } : {}) });
  const filters = [undefined, ...states].map((candidate) => {
    const current = candidate === chosen;
    return html`<a class="filter${current ? " current" : ""}" href="${links.to("/schedules", { state: candidate })}">${candidate ?? "all"}</a> `;
  });
  const body =
    rows.length === 0
      ? html`<p class="muted">No schedules${chosen !== undefined ? ` ${chosen}` : ""}. <code>agent.conversation(id).schedule(input, { at } | { cron })</code> makes one.</p>`
      : html`<table id="schedules"><thead><tr><th>schedule</th><th>conversation</th><th>when</th><th>state</th><th>next run</th><th>last fired</th><th>input</th><th></th></tr></thead><tbody>${rows.map(
          (schedule) => scheduleRow(links, schedule),
        )}</tbody></table>
        <p class="muted small">${String(rows.length)} schedule${rows.length === 1 ? "" : "s"}${rows.length === schedulesShownMax ? ` (the newest ${schedulesShownMax})` : ""}; times in UTC.</p>`;
  return html`<h1>Schedules</h1><p>${filters}</p>${visitorNote(environment)}${body}`;
}

function scheduleRow(links: Links, schedule: Schedule): Html {
  const page = links.to(`/schedules/${encodeURIComponent(schedule.scheduleId)}`);
  return html`<tr data-schedule="${schedule.scheduleId}" data-state="${schedule.state}">
    <td><a href="${page}"><code>${schedule.scheduleId.slice(0, 8)}</code></a></td>
    <td>${conversationOf(links, schedule)}</td>
    <td>${timingOf(schedule)}</td>
    <td><span class="badge ${schedule.state === "active" ? "live" : "neutral"}">${schedule.state}</span></td>
    <td class="next-run">${schedule.nextRunAt !== undefined ? formatTime(schedule.nextRunAt) : ""}</td>
    <td class="last-fired">${lastFiring(links, schedule)}</td>
    <td class="input">${compactJson(schedule.input, 60)}</td>
    <td>${schedule.state === "active" ? html`<a class="small" href="${links.to(`/schedules/${encodeURIComponent(schedule.scheduleId)}`, { confirm: "run" })}">Run now…</a> · <a class="small" href="${links.to(`/schedules/${encodeURIComponent(schedule.scheduleId)}`, { confirm: "cancel" })}">Cancel…</a>` : ""}</td>
  </tr>`;
}

/** One schedule; with `confirm=cancel|run`, the confirmation of that action. */
export async function scheduleLive(environment: Environment, links: Links, scheduleId: string, params: URLSearchParams): Promise<Html | undefined> {
  const schedule = await environment.schedule(scheduleId);
  if (schedule === undefined) return undefined;
  const confirm = params.get("confirm");
  const details = html`<dl>
      <dt>conversation</dt><dd>${conversationOf(links, schedule)}</dd>
      <dt>when</dt><dd>${timingOf(schedule)}</dd>
      <dt>state</dt><dd><span class="badge ${schedule.state === "active" ? "live" : "neutral"}">${schedule.state}</span> · ${String(schedule.firings)} firing${schedule.firings === 1 ? "" : "s"}</dd>
      <dt>next run</dt><dd class="next-run">${schedule.nextRunAt !== undefined ? formatTime(schedule.nextRunAt) : "none"}</dd>
      <dt>last fired</dt><dd class="last-fired">${lastFiring(links, schedule) || "never"}</dd>
      <dt>made</dt><dd>${formatTime(schedule.createdAt)}</dd>
    </dl><h3>Input</h3>${jsonBlock(schedule.input)}${Object.keys(schedule.options).length > 0 ? html`<h3>Start options</h3>${jsonBlock(schedule.options as never)}` : ""}`;
  const back = html`<p><a href="${links.to("/schedules")}">← All schedules</a></p>`;
  if ((confirm === "cancel" || confirm === "run") && schedule.state === "active") {
    return html`<h1>${confirm === "cancel" ? "Cancel" : "Run now"}: schedule <code>${schedule.scheduleId}</code>?</h1>
      <p class="muted">${confirm === "cancel" ? "It fires no more (a firing under way still starts once)." : "It starts its conversation now, once; its next run stays as it is."}</p>
      ${visitorNote(environment)}
      ${actionForm(links, "schedule", { scheduleId: schedule.scheduleId, scheduleAction: confirm }, html`<button type="submit" class="${confirm === "cancel" ? "reject" : "approve"}" id="confirm-schedule">Confirm: ${confirm === "cancel" ? "cancel it" : "run it now"}</button>`, "schedule-confirm")}
      ${details}${back}`;
  }
  const actions =
    schedule.state === "active"
      ? html`<p id="schedule-actions"><a href="${links.to(`/schedules/${encodeURIComponent(schedule.scheduleId)}`, { confirm: "run" })}">Run now…</a> · <a href="${links.to(`/schedules/${encodeURIComponent(schedule.scheduleId)}`, { confirm: "cancel" })}">Cancel…</a></p>`
      : "";
  return html`<h1>Schedule <code>${schedule.scheduleId}</code></h1>${actions}${details}${back}`;
}

function visitorNote(environment: Environment): Html | "" {
  return environment.visitor
    ? html`<p class="notice small">This dashboard visits the store beside its owner: a cancel lands at once; a run now is started by the owner, if it defines the schedule's agent.</p>`
    : "";
}

function conversationOf(links: Links, schedule: Schedule): Html {
  const conversation = html`<a href="${links.to(`/conversations/${encodeURIComponent(schedule.agentId)}`)}"><code>${schedule.agentId}</code></a>`;
  return schedule.definition !== undefined ? html`${conversation} <span class="muted small">(${schedule.definition})</span>` : conversation;
}

function timingOf(schedule: Schedule): Html {
  if (schedule.cron !== undefined) return html`cron <code>${schedule.cron}</code> <span class="muted small">${schedule.timezone ?? "UTC"}</span>`;
  return html`at ${schedule.at !== undefined ? formatTime(schedule.at) : ""}`;
}

function lastFiring(links: Links, schedule: Schedule): Html | "" {
  const firing = schedule.lastFiring;
  if (firing === undefined) return "";
  const execution = firing.executionId !== undefined ? html` · <a href="${links.execution(firing.executionId)}">execution</a>` : "";
  return html`${formatTime(firing.firedAt)} <span class="small">${firing.outcome}${firing.error !== undefined ? ` ${firing.error}` : ""}</span>${execution}`;
}
