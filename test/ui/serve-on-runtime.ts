// Run by test/ui/runtimes.slow.test.ts under Bun and Deno, from the sources: the
// dashboard's handler served by the runtime's own server (Bun.serve,
// Deno.serve) on a SQLite store another process owns (as a visitor), under
// a base path; prints `CHECK <json>` with what a client saw.
//
//   bun test/ui/serve-on-runtime.ts <store>
//   deno run -A --unstable-sloppy-imports --node-modules-dir=manual test/ui/serve-on-runtime.ts <store>

import process from "node:process";
import { Phronomy } from "../../host/index.js";
import { createDashboard } from "../../host/ui/index.js";

interface RuntimeServer {
  readonly origin: string;
  stop(): Promise<void> | void;
}
type Handler = (request: Request) => Promise<Response>;
const runtime = globalThis as unknown as {
  Bun?: { serve(options: { port: number; hostname: string; fetch: Handler }): { port: number; stop(force: boolean): void } };
  Deno?: { serve(options: { port: number; hostname: string; onListen(): void }, handler: Handler): { addr: { port: number }; shutdown(): Promise<void> } };
};

function serve(handle: Handler): RuntimeServer & { readonly name: string } {
  if (runtime.Bun) {
    const server = runtime.Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: handle });
    return { name: "bun", origin: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
  }
  if (runtime.Deno) {
    const server = runtime.Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => undefined }, handle);
    return { name: "deno", origin: `http://127.0.0.1:${server.addr.port}`, stop: () => server.shutdown() };
  }
  throw new Error("run this under Bun or Deno");
}

const store = process.argv[2];
if (store === undefined) throw new Error("usage: serve-on-runtime.ts <store>");
const environment = await Phronomy.open({ store, visitor: true, logger: { warn: () => undefined } });
const dashboard = createDashboard(environment, { basePath: "/admin" });
const server = serve(dashboard.handle);
try {
  const page = await fetch(dashboard.urlFor(server.origin));
  const body = await page.text();
  const withoutToken = await fetch(`${server.origin}/admin/`);
  const crossSite = await fetch(`${server.origin}/admin/actions/cancel`, {
    method: "POST",
    headers: { origin: "https://evil.example", "content-type": "application/x-www-form-urlencoded" },
    body: `token=${dashboard.token}&executionId=x`,
  });
  console.log(
    `CHECK ${JSON.stringify({ runtime: server.name, page: page.status, listed: body.includes('id="executions"'), withoutToken: withoutToken.status, crossSite: crossSite.status })}`,
  );
} finally {
  await server.stop();
  await environment.close();
}
