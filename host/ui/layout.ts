// The page around every view: the header (store, owner, navigation), a
// notice from the last action, and the live region the enhancement script
// (`assets.ts`) refreshes. A page asked with `fragment=live` is the live
// region's content alone.

import { html, type Html } from "./html.js";
import type { Links } from "./links.js";

export interface PageFrame {
  readonly title: string;
  readonly storeLabel: string;
  readonly ownerLabel: string;
  readonly notice?: string;
  readonly error?: string;
  readonly pollMs: number;
}

export function page(links: Links, frame: PageFrame, live: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${frame.title} · Phronomy</title>
<link rel="stylesheet" href="${links.to("/assets/app.css")}">
<script src="${links.to("/assets/app.js")}" defer></script>
</head>
<body>
<header class="top">
  <a class="brand" href="${links.to("/")}">Phronomy</a>
  <a class="nav" href="${links.to("/talk")}">Talk to an agent</a>
  <a class="nav" href="${links.to("/schedules")}">Schedules</a>
  <span class="muted">store <code>${frame.storeLabel}</code> · ${frame.ownerLabel}</span>
  <span class="live-state muted" id="live-state">live</span>
</header>
${frame.notice ? html`<p class="notice ok" role="status">${frame.notice}</p>` : ""}
${frame.error ? html`<p class="notice bad" role="alert">${frame.error}</p>` : ""}
<main id="live" data-poll-ms="${String(frame.pollMs)}">${live}</main>
</body>
</html>`;
}
