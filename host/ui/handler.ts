// The dashboard as one standard `(Request) => Promise<Response>` function
// (docs/decisions/0038): mountable under node:http (`serve.ts`), Hono,
// Deno.serve and Bun.serve, at a base path.
//
// Rules kept here:
// * Every request under the base path carries the access token (query
//   `token`, or the form field / `x-phronomy-token` header on a POST), or is
//   refused with 403 before anything is read. Compared in constant time.
// * GET (and HEAD) read; only POST acts, only on `/actions/*`, and only
//   when the request's `Origin` is the page's own origin (or one the
//   application allowed): a cross-site form cannot act even with a leaked
//   token in hand, and a page without an Origin header is refused.
// * Every action is one call of the public admin API (`env.admin`).
// * Responses are never cached, never framed, send a Referer only to their
//   own origin (the token is in the URL; `no-referrer` would make browsers
//   post `Origin: null`), and run under a CSP that allows the page's own
//   script and style only.

import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Environment } from "../index.js";
import { InvalidInputError } from "../index.js";
import { appCss, appJs } from "./assets.js";
import { conversationLive, talkPage } from "./conversation-page.js";
import { executionLive } from "./execution-page.js";
import { html, type Html } from "./html.js";
import { page, type PageFrame } from "./layout.js";
import { Links } from "./links.js";
import { listLive, type ListQuery } from "./list-page.js";
import { bulkLive } from "./bulk-page.js";
import { scheduleLive, schedulesLive } from "./schedules-page.js";
import { runAction, type ActionOutcome } from "./actions.js";

/** What `createDashboard` takes. */
export interface DashboardOptions {
  /** Where the dashboard is mounted, e.g. `/admin/phronomy` (default: the root). */
  readonly basePath?: string;
  /** The access token; by default 32 random bytes (base64url). */
  readonly token?: string;
  /** Origins besides the request's own from which actions are accepted
   * (e.g. the public origin in front of a reverse proxy). */
  readonly allowedOrigins?: readonly string[];
  /** How the store is named in the header (no password); default the store's path. */
  readonly storeLabel?: string;
  /** How often an open page refreshes its live region (default 1000 ms). */
  readonly pollMs?: number;
  /** Who makes a request, from the embedding application's own auth (a
   * session cookie, a header its proxy sets): recorded as `decidedBy` with
   * every decision taken from the page and shown in the timeline. Called
   * for each action; undefined records no one. */
  readonly identify?: (request: Request) => string | undefined | Promise<string | undefined>;
}

/** A dashboard: its request handler, and what its URL needs. */
export interface Dashboard {
  /** The access token every request must carry. */
  readonly token: string;
  /** Where it is mounted (normalized: no trailing slash). */
  readonly basePath: string;
  /** The handler: a Response for every Request (404 outside the base path). */
  readonly handle: (request: Request) => Promise<Response>;
  /** The URL to open, token included, given the server's origin. */
  urlFor(origin: string): string;
}

/** A POST body larger than this is refused (a decision's reason is short). */
export const actionBodyMax = 64 * 1024;
/** The shortest access token accepted. */
export const tokenLengthMin = 16;
const pollMsMin = 250;
/** What `identify` may answer at most (a decision's `decidedBy`). */
const decidedByMax = 256;

const securityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

/** The dashboard on an environment, as a `(Request) => Promise<Response>`
 * handler to mount in the application's own server. */
export function createDashboard(environment: Environment, options: DashboardOptions = {}): Dashboard {
  const basePath = normalizeBasePath(options.basePath ?? "");
  const token = options.token ?? randomBytes(32).toString("base64url");
  if (typeof token !== "string" || token.length < tokenLengthMin)
    throw new InvalidInputError(`createDashboard: the token must be a string of at least ${tokenLengthMin} characters`);
  if (options.pollMs !== undefined && (typeof options.pollMs !== "number" || !Number.isFinite(options.pollMs)))
    throw new InvalidInputError(`createDashboard: pollMs must be a number of milliseconds, got ${JSON.stringify(options.pollMs)}`);
  if (options.allowedOrigins !== undefined && (!Array.isArray(options.allowedOrigins) || options.allowedOrigins.some((origin) => typeof origin !== "string")))
    throw new InvalidInputError('createDashboard: allowedOrigins must be an array of origins such as "https://admin.example.com"');
  const pollMs = Math.max(pollMsMin, options.pollMs ?? 1_000);
  const tokenDigest = digest(token);
  const links = new Links(basePath, token);
  const allowedOrigins = new Set(options.allowedOrigins ?? []);
  const storeLabel = options.storeLabel ?? environment.store.path;
  if (options.identify !== undefined && typeof options.identify !== "function")
    throw new InvalidInputError("createDashboard: identify must be a function (request) => string | undefined");
  const identify = options.identify;

  const handle = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    if (url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`)) return text(404, "not found");
    const path = url.pathname.slice(basePath.length) || "/";
    const isAction = path.startsWith("/actions/");
    if (request.method === "POST") {
      if (!isAction) return text(405, "only actions are posted", { allow: "GET, HEAD" });
      return post(request, url, path.slice("/actions/".length));
    }
    if (request.method !== "GET" && request.method !== "HEAD") return text(405, "method not allowed", { allow: isAction ? "POST" : "GET, HEAD" });
    if (!tokenMatches(url.searchParams.get("token"), tokenDigest)) return refusedToken();
    if (isAction) return text(405, "an action is a POST", { allow: "POST" });
    try {
      return await get(url, path);
    } catch (error) {
      return text(500, `the dashboard could not read the store: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  async function get(url: URL, path: string): Promise<Response> {
    if (path === "/assets/app.js") return new Response(appJs, { headers: { ...securityHeaders, "content-type": "text/javascript; charset=utf-8" } });
    if (path === "/assets/app.css") return new Response(appCss, { headers: { ...securityHeaders, "content-type": "text/css; charset=utf-8" } });
    const fragment = url.searchParams.get("fragment") === "live";
    const now = Date.now();
    const frame = frameOf(url);
    if (path === "/") {
      const query: ListQuery = {
        ...optional("status", url.searchParams.get("status")),
        ...optional("agent", url.searchParams.get("agent")),
        ...optional("definition", url.searchParams.get("definition")),
        ...optional("q", url.searchParams.get("q")),
        ...optional("within", url.searchParams.get("within")),
        ...optional("text", url.searchParams.get("text")),
        ...optional("cursor", url.searchParams.get("cursor")),
      };
      const live = await listLive(environment, links, query, now);
      return htmlResponse(200, fragment ? live : page(links, { ...frame, title: "Executions" }, live));
    }
    if (path === "/talk") {
      const live = talkPage(links, environment.admin.definitions());
      return htmlResponse(200, fragment ? live : page(links, { ...frame, title: "Talk to an agent" }, live));
    }
    const conversation = /^\/conversations\/([^/]+)$/.exec(path);
    if (conversation) {
      const agentId = decodeURIComponent(conversation[1]!);
      const live = await conversationLive(environment, links, agentId);
      return htmlResponse(200, fragment ? live : page(links, { ...frame, title: `Conversation ${agentId}` }, live));
    }
    if (path === "/bulk") {
      const live = await bulkLive(environment, links, url.searchParams, now);
      return htmlResponse(200, fragment ? live : page(links, { ...frame, title: "Confirm" }, live));
    }
    if (path === "/schedules") {
      const live = await schedulesLive(environment, links, url.searchParams);
      return htmlResponse(200, fragment ? live : page(links, { ...frame, title: "Schedules" }, live));
    }
    const schedule = /^\/schedules\/([^/]+)$/.exec(path);
    if (schedule) {
      const scheduleId = decodeURIComponent(schedule[1]!);
      const live = await scheduleLive(environment, links, scheduleId, url.searchParams);
      const shown = live ?? html`<p>No schedule <code>${scheduleId}</code> in this store. <a href="${links.to("/schedules")}">All schedules</a></p>`;
      return htmlResponse(live === undefined ? 404 : 200, fragment ? shown : page(links, { ...frame, title: `Schedule ${scheduleId}` }, shown));
    }
    const match = /^\/executions\/([^/]+)$/.exec(path);
    if (match) {
      const executionId = decodeURIComponent(match[1]!);
      const row = await environment.admin.execution(executionId);
      if (row === undefined) {
        const missing = html`<p>No execution <code>${executionId}</code> in this store. <a href="${links.to("/")}">All executions</a></p>`;
        return htmlResponse(404, fragment ? missing : page(links, { ...frame, title: "Not found" }, missing));
      }
      const live = await executionLive(environment, links, row);
      return htmlResponse(200, fragment ? live : page(links, { ...frame, title: `Execution ${executionId}` }, live));
    }
    return text(404, "not found");
  }

  function frameOf(url: URL): PageFrame {
    return {
      title: "",
      storeLabel,
      ownerLabel: ownerLabelOf(environment),
      pollMs,
      ...optional("notice", url.searchParams.get("notice")),
      ...optional("error", url.searchParams.get("error")),
    };
  }

  async function post(request: Request, url: URL, action: string): Promise<Response> {
    const length = Number(request.headers.get("content-length") ?? "0");
    if (!(length <= actionBodyMax)) return text(413, `an action's body is at most ${actionBodyMax} bytes`);
    const body = await request.text();
    if (body.length > actionBodyMax) return text(413, `an action's body is at most ${actionBodyMax} bytes`);
    const fields = new URLSearchParams(body);
    if (!tokenMatches(request.headers.get("x-phronomy-token") ?? fields.get("token"), tokenDigest)) return refusedToken();
    const origin = request.headers.get("origin");
    if (origin === null || (origin !== url.origin && !allowedOrigins.has(origin))) {
      return text(403, `refused: an action must come from the dashboard's own page (Origin ${origin ?? "missing"}, expected ${url.origin})`);
    }
    const identity = await identityOf(request);
    if (identity.refused !== undefined) return text(403, identity.refused);
    const outcome: ActionOutcome = await runAction(environment, action, fields, identity.decidedBy !== undefined ? { decidedBy: identity.decidedBy } : {});
    if (outcome.status === 404) return text(404, `no action "${action}"`);
    const executionId = fields.get("executionId");
    // A form may name the page it returns to: one of the dashboard's own pages, nothing else.
    const back = fields.get("back");
    const returnTo = back !== null && /^\/(conversations|executions|schedules)\/[^/?#]+$/.test(back) ? back : undefined;
    const target = outcome.target ?? returnTo ?? (executionId ? `/executions/${encodeURIComponent(executionId)}` : "/");
    const location = links.to(target, outcome.error !== undefined ? { error: outcome.error } : { notice: outcome.notice });
    return new Response(null, {
      status: 303,
      headers: { ...securityHeaders, location, "x-phronomy-outcome": outcome.error !== undefined ? "refused" : "done" },
    });
  }

  /** The application's identity of the request: a string of at most
   * `decidedByLengthMax` characters, or no one; an identify that throws or
   * answers anything else refuses the action (nothing is decided by a
   * person the application could not name). */
  async function identityOf(request: Request): Promise<{ decidedBy?: string; refused?: string }> {
    if (identify === undefined) return {};
    let identity: unknown;
    try {
      identity = await identify(request);
    } catch (error) {
      return { refused: `refused: the application could not identify who acts (${error instanceof Error ? error.message : String(error)})` };
    }
    if (identity === undefined) return {};
    if (typeof identity !== "string" || identity === "" || identity.length > decidedByMax)
      return {
        refused: `refused: identify must answer a non-empty string of at most ${decidedByMax} characters or undefined, got ${typeof identity === "string" ? `${identity.length} characters` : typeof identity}`,
      };
    return { decidedBy: identity };
  }

  return {
    token,
    basePath,
    handle,
    urlFor: (origin) => `${origin.replace(/\/$/, "")}${links.to("/")}`,
  };
}

function ownerLabelOf(environment: Environment): string {
  const admin = environment.admin;
  if (admin.storeKind === "postgres") return "PostgreSQL, shared by its processes";
  if (!environment.visitor) return "owned by this process";
  const owner = admin.owner();
  return owner === undefined ? "visiting; no process owns the store now" : `visiting beside its owner, process ${owner.pid} on ${owner.hostname}`;
}

function normalizeBasePath(given: string): string {
  if (typeof given !== "string" || (given !== "" && !given.startsWith("/")))
    throw new InvalidInputError(`createDashboard: basePath must be empty or start with "/", got ${JSON.stringify(given)}`);
  return given.replace(/\/+$/, "");
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

function tokenMatches(given: string | null, expected: Buffer): boolean {
  return given !== null && timingSafeEqual(digest(given), expected);
}

function optional<K extends string>(key: K, value: string | null): { [P in K]?: string } {
  return (value === null || value === "" ? {} : { [key]: value }) as { [P in K]?: string };
}

function refusedToken(): Response {
  return text(403, "refused: this dashboard needs its access token (the URL printed when it started, ?token=…)");
}

function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(`${body}\n`, { status, headers: { ...securityHeaders, ...headers, "content-type": "text/plain; charset=utf-8" } });
}

function htmlResponse(status: number, body: Html): Response {
  return new Response(body.text, { status, headers: { ...securityHeaders, "content-type": "text/html; charset=utf-8" } });
}
