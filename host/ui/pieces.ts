// Small pieces several pages share: the state badge, the approval card with
// its decision form, the action forms (each a POST carrying the token), and
// a JSON block.

import type { ExecutionRow, Json } from "../index.js";
import { prettyJson, stateClass, stateOf } from "./format.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";

export function badge(row: Pick<ExecutionRow, "status" | "outcome" | "phase">): Html {
  return html`<span class="badge ${stateClass(row)}">${stateOf(row)}</span>`;
}

export function jsonBlock(value: Json | undefined): Html {
  return html`<pre class="json">${prettyJson(value)}</pre>`;
}

/** A POST form to one action; `fields` become hidden inputs. */
export function actionForm(links: Links, action: string, fields: Readonly<Record<string, string>>, body: Html, className = "inline"): Html {
  const hidden = Object.entries({ token: links.tokenValue, ...fields }).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
  return html`<form method="post" action="${links.action(action)}" class="${className}">${hidden}${body}</form>`;
}

/** An approval waiting, with its decision form (decision-card.ts). */
export { approvalCard } from "./decision-card.js";
