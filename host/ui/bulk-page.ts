// The confirmation step of a bulk cancel or retry (docs/decisions/0082):
// a GET page (it reads, does nothing) that lists exactly the executions
// the action will take — the rows selected on the list, or the first
// `bulkExecutionsMax` the filter matches — and one POST form carrying
// their ids. Only that POST acts (`actions.ts`, through `env.admin`), so
// what is done is what the person saw, never "whatever matches now".

import { bulkExecutionsMax, type Environment, type ExecutionRow } from "../index.js";
import { compactJson, formatTime } from "./format.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";
import { filterOf, type ListQuery } from "./list-page.js";
import { actionForm, badge } from "./pieces.js";

const verbs = { cancel: "Cancel", retry: "Retry" } as const;

export async function bulkLive(environment: Environment, links: Links, params: URLSearchParams, now: number): Promise<Html> {
  const query: ListQuery = Object.fromEntries(
    ["status", "agent", "definition", "q", "text", "within"].flatMap((name) => {
      const value = params.get(name);
      return value === null || value === "" ? [] : [[name, value]];
    }),
  );
  const back = html`<p><a href="${links.to("/", { ...query })}">← Back to the list</a></p>`;
  const matching = params.get("matching");
  const action = matching ?? params.get("action");
  if (action !== "cancel" && action !== "retry") return html`<p class="notice bad" role="alert">Choose cancel or retry.</p>${back}`;
  let rows: ExecutionRow[];
  if (matching !== null) {
    rows = (await environment.admin.page({ ...filterOf(query, now), limit: bulkExecutionsMax })).rows;
  } else {
    const ids = [...new Set(params.getAll("executionIds"))];
    if (ids.length > bulkExecutionsMax) return html`<p class="notice bad" role="alert">At most ${String(bulkExecutionsMax)} executions at once.</p>${back}`;
    rows = (await Promise.all(ids.map((id) => environment.admin.execution(id)))).filter((row): row is ExecutionRow => row !== undefined);
  }
  if (rows.length === 0)
    return html`<h1>${verbs[action]}</h1><p class="muted">No execution is selected${matching !== null ? " or matches the filter" : ""}.</p>${back}`;
  return html`<h1>${verbs[action]} ${String(rows.length)} execution${rows.length === 1 ? "" : "s"}?</h1>
    <p class="muted">${matching !== null ? `The newest ${rows.length} the filter matches (at most ${bulkExecutionsMax}). ` : ""}Exactly these are ${action === "cancel" ? "cancelled (each stops after its work in flight)" : "retried from their last durable step"}; one that cannot be is reported and the others go on.</p>
    ${confirmForm(links, action, rows)}
    <table id="bulk-targets"><thead><tr><th>execution</th><th>agent</th><th>state</th><th>created</th><th>input</th></tr></thead><tbody>${rows.map(
      (row) =>
        html`<tr data-execution="${row.executionId}"><td><code>${row.executionId}</code></td><td><code>${row.agentId}</code></td><td>${badge(row)}</td><td>${formatTime(row.createdAt)}</td><td class="input">${compactJson(row.input, 80)}</td></tr>`,
    )}</tbody></table>${back}`;
}

function confirmForm(links: Links, action: "cancel" | "retry", rows: readonly ExecutionRow[]): Html {
  const ids = rows.map((row) => html`<input type="hidden" name="executionIds" value="${row.executionId}">`);
  const reason =
    action === "cancel"
      ? html`<label>Reason <input type="text" name="reason" maxlength="2000" placeholder="recorded with each cancel" data-keep="bulk-reason"></label> `
      : "";
  return actionForm(
    links,
    "bulk",
    { bulkAction: action },
    html`${ids}${reason}<button type="submit" class="${action === "cancel" ? "reject" : "approve"}" id="confirm-bulk">Confirm: ${action} ${String(rows.length)}</button>`,
    "bulk-confirm",
  );
}
