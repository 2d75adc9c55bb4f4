/**
 * `phronomy/ui`: the dashboard (docs/decisions/0038). `createDashboard(env)`
 * gives a standard `(Request) => Promise<Response>` handler to mount in the
 * application's own server, at a base path; `serveDashboard` runs it on
 * node:http (what `phronomy ui` does).
 *
 * ```ts
 * import { createDashboard, serveDashboard } from "phronomy/ui";
 * const dashboard = createDashboard(env, { basePath: "/admin/agents" });
 * Bun.serve({ fetch: dashboard.handle });            // or Deno.serve(dashboard.handle), Hono: app.all("/admin/agents/*", (c) => dashboard.handle(c.req.raw))
 * console.log(dashboard.urlFor("http://127.0.0.1:3000"));
 * ```
 *
 * @module phronomy/ui
 */

import type { Environment } from "../index.js";
import { createDashboard, type Dashboard, type DashboardOptions } from "./handler.js";
import { serveHandler, type ServeOptions, type ServedDashboard } from "./serve.js";

export { createDashboard, actionBodyMax, tokenLengthMin, type Dashboard, type DashboardOptions } from "./handler.js";
export { escapeHtml } from "./html.js";
export type { ServeOptions, ServedDashboard } from "./serve.js";

/** Serves a dashboard on node:http (127.0.0.1 and a free port unless
 * told); `url` is the page to open, token included. */
export async function serveDashboard(
  environment: Environment,
  options: DashboardOptions & ServeOptions = {},
): Promise<ServedDashboard & { readonly dashboard: Dashboard; readonly url: string }> {
  const dashboard = createDashboard(environment, options);
  const served = await serveHandler(dashboard.handle, options);
  return { ...served, dashboard, url: dashboard.urlFor(served.origin) };
}
