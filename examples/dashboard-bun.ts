// README, "Dashboard": the dashboard mounted in your own server, here
// Bun's (`bun examples/dashboard-bun.ts`; the handler is a standard
// `(Request) => Promise<Response>`, so Deno.serve, Hono and node:http take
// it too). It serves on a free port, prints the URL, fetches the page once
// and stops.

import { Phronomy } from "phronomy";

/** Bun's global, as much of it as this example uses (Bun's own types have it all). */
declare const Bun: {
  serve(options: { fetch: (request: Request) => Promise<Response>; hostname: string; port: number }): { port: number; stop(force: boolean): void };
};

const env = await Phronomy.open({ store: "./agents.db" });

// #region readme
import { createDashboard } from "phronomy/ui";
const dashboard = createDashboard(env, { basePath: "/admin/agents" });
const server = Bun.serve({ fetch: dashboard.handle, hostname: "127.0.0.1", port: 0 }); // Deno.serve(dashboard.handle); Hono: app.all("/admin/agents/*", (c) => dashboard.handle(c.req.raw))
console.log(dashboard.urlFor(`http://127.0.0.1:${server.port}`));
// #endregion

const page = await fetch(dashboard.urlFor(`http://127.0.0.1:${server.port}`));
const withoutToken = await fetch(`http://127.0.0.1:${server.port}/admin/agents/`);
console.log("page", page.status, (await page.text()).includes('id="executions"'), "without the token", withoutToken.status);
server.stop(true);
await env.close();
