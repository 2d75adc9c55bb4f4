// The dashboard handler without a browser: the access token on every
// request, POST-only actions with an Origin check, the base path, escaping
// of every stored value, masked secrets, and the actions themselves
// (decide bound to the approval id and arguments hash, cancel, retry).

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Json } from "../../host/index.js";
import { createDashboard } from "../../host/ui/index.js";
import { ended, openFixture, suspended, type Fixture } from "./fixture.js";

const origin = "http://127.0.0.1:4000";
let fixture: Fixture;

beforeEach(async () => {
  fixture = await openFixture();
});
afterEach(async () => {
  await fixture.close();
});

function get(path: string, token: string | null = fixture.dashboard.token): Promise<Response> {
  const url = new URL(path, origin);
  if (token !== null) url.searchParams.set("token", token);
  return fixture.dashboard.handle(new Request(url));
}

function post(action: string, fields: Record<string, string>, headers: Record<string, string> = { origin }): Promise<Response> {
  return fixture.dashboard.handle(
    new Request(new URL(`/actions/${action}`, origin), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(fields).toString(),
    }),
  );
}

async function waitingRefund(input: Json): Promise<{ executionId: string; approvalId: string; argumentsHash: string }> {
  const executionId = await fixture.start("refund", input);
  await fixture.until(executionId, suspended);
  const approval = (await fixture.environment.admin.approvals()).find((candidate) => candidate.executionId === executionId)!;
  return { executionId, approvalId: approval.request.approvalId, argumentsHash: approval.request.argumentsHash };
}

describe("the access token", () => {
  it("is required on every request: pages, fragments and assets are refused without it or with another", async () => {
    for (const path of ["/", "/?fragment=live", "/assets/app.js", "/executions/x"]) {
      expect((await get(path, null)).status).toBe(403);
      expect((await get(path, "not-the-token-but-long-enough")).status).toBe(403);
    }
    const page = await get("/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(await page.text()).toContain("<title>Executions · Phronomy</title>");
  });

  it("is random per dashboard, at least 32 characters, and refused when too short", () => {
    const other = createDashboard(fixture.environment);
    expect(other.token).not.toBe(fixture.dashboard.token);
    expect(other.token.length).toBeGreaterThanOrEqual(32);
    expect(() => createDashboard(fixture.environment, { token: "short" })).toThrow(/at least 16/);
    expect(() => createDashboard(fixture.environment, { pollMs: Number.NaN })).toThrow(/pollMs/);
    expect(() => createDashboard(fixture.environment, { basePath: "admin" })).toThrow(/basePath/);
  });
});

describe("actions", () => {
  it("are POST only, with the token and the page's own Origin; anything else is refused and decides nothing", async () => {
    const waiting = await waitingRefund({ orderId: "42" });
    const fields = { executionId: waiting.executionId, approvalId: waiting.approvalId, decision: "approve" };
    expect((await post("decide", fields)).status).toBe(403); // no token
    expect((await post("decide", { ...fields, token: "wrong-token-wrong-token" })).status).toBe(403);
    expect((await post("decide", { ...fields, token: fixture.dashboard.token }, {})).status).toBe(403); // no Origin
    const crossSite = await post("decide", { ...fields, token: fixture.dashboard.token }, { origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
    expect(await crossSite.text()).toContain("Origin https://evil.example");
    expect((await get(`/actions/decide?executionId=${waiting.executionId}`)).status).toBe(405);
    expect((await fixture.dashboard.handle(new Request(new URL("/", origin), { method: "PUT" }))).status).toBe(405);
    expect((await post("nothing", { token: fixture.dashboard.token })).status).toBe(404);
    expect((await fixture.environment.execution(waiting.executionId))?.status).toBe("suspended");
    expect(fixture.refunds).toEqual([]);
  });

  it("approve: bound to the approval id and arguments hash; the tool runs once and the execution completes", async () => {
    const waiting = await waitingRefund({ orderId: "42", amountCents: 3990 });
    const stale = await post("decide", {
      token: fixture.dashboard.token,
      executionId: waiting.executionId,
      approvalId: waiting.approvalId,
      argumentsHash: "0".repeat(64),
      decision: "approve",
    });
    expect(stale.status).toBe(303);
    expect(new URL(stale.headers.get("location")!, origin).searchParams.get("error")).toMatch(/APPROVAL_MISMATCH.*arguments/);
    expect((await fixture.environment.execution(waiting.executionId))?.status).toBe("suspended");

    const response = await post("decide", { token: fixture.dashboard.token, ...waiting, decision: "approve", reason: "checked" });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get("location")!, origin);
    expect(location.pathname).toBe(`/executions/${waiting.executionId}`);
    expect(location.searchParams.get("token")).toBe(fixture.dashboard.token);
    expect(location.searchParams.get("notice")).toContain("approved");
    await fixture.until(waiting.executionId, ended);
    const row = await fixture.environment.execution(waiting.executionId);
    expect(row).toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(fixture.refunds).toEqual([{ input: { orderId: "42", amountCents: 3990 }, idempotencyKey: expect.stringContaining(waiting.executionId) }]);
    const page = await (await get(`/executions/${waiting.executionId}`)).text();
    expect(page).toContain("approval decided");
    expect(page).toContain("idempotency key");
  });

  it("reject: the reason is recorded and shown; the tool never runs", async () => {
    const waiting = await waitingRefund({ orderId: "7" });
    const response = await post("decide", { token: fixture.dashboard.token, ...waiting, decision: "reject", reason: "no photo of the damage" });
    expect(new URL(response.headers.get("location")!, origin).searchParams.get("notice")).toContain("rejected");
    await fixture.until(waiting.executionId, ended);
    const decided = (await fixture.environment.timeline(waiting.executionId)).find((step) => step.kind === "approval_decided");
    expect(decided?.payload).toMatchObject({ approved: false, reason: "no photo of the damage" });
    expect(fixture.refunds).toEqual([]);
    expect(await (await get(`/executions/${waiting.executionId}`)).text()).toContain("no photo of the damage");
  });

  it("cancel, retry and recover go through the admin API", async () => {
    const waiting = await waitingRefund({ orderId: "9" });
    const cancelled = await post("cancel", { token: fixture.dashboard.token, executionId: waiting.executionId, reason: "customer withdrew" });
    expect(new URL(cancelled.headers.get("location")!, origin).searchParams.get("notice")).toContain("ended: cancelled");
    const row = await fixture.environment.execution(waiting.executionId);
    expect(row).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    const retried = await post("retry", { token: fixture.dashboard.token, executionId: waiting.executionId });
    expect(new URL(retried.headers.get("location")!, origin).searchParams.get("notice")).toContain("retrying");
    await fixture.until(waiting.executionId, suspended);
    const recovered = await post("recover", { token: fixture.dashboard.token });
    expect(new URL(recovered.headers.get("location")!, origin).searchParams.get("notice")).toMatch(/^recovery: \d+ unfinished/);
    const again = await post("cancel", { token: fixture.dashboard.token, executionId: "no-such-execution" });
    expect(new URL(again.headers.get("location")!, origin).searchParams.get("error")).toContain("EXECUTION_NOT_FOUND");
  });
});

describe("rendering", () => {
  it("escapes every stored value: hostile tool arguments show as text, never as markup; secret-named fields are masked", async () => {
    const hostile = { orderId: "<script>alert(1)</script>", note: '"><img src=x onerror=alert(2)>', apiKey: "sk-live-secret-value" };
    const waiting = await waitingRefund(hostile);
    for (const path of [
      "/",
      `/executions/${waiting.executionId}`,
      `/executions/${waiting.executionId}?fragment=live`,
      "/?notice=%3Cscript%3Ex%3C%2Fscript%3E",
    ]) {
      const text = await (await get(path)).text();
      expect(text).not.toContain("<script>alert");
      expect(text).not.toContain("<img src=x");
      expect(text).not.toContain("<script>x");
      expect(text).not.toContain("sk-live-secret-value");
    }
    const page = await (await get(`/executions/${waiting.executionId}`)).text();
    expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(page).toContain("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;");
  });

  it("a model response shows its reasoning, the sources it cited, its files and the token details, escaped", async () => {
    const executionId = await fixture.start("cite");
    await fixture.until(executionId, ended);
    const page = await (await get(`/executions/${executionId}`)).text();
    expect(page).toContain("reasoning: Check the &lt;b&gt;manual&lt;/b&gt;.");
    expect(page).toContain("source: &lt;i&gt;Kettles&lt;/i&gt; · file: image/png");
    expect(page).toContain("tokens: 40 in · 12 out (5 reasoning) · 52 total");
    expect(page).not.toContain("<i>Kettles");
  });

  it("a live fragment is the live region alone; a base path mounts the dashboard beneath it", async () => {
    const fragment = await (await get("/?fragment=live")).text();
    expect(fragment).not.toContain("<html");
    expect(fragment).toContain('id="approvals"');
    const mounted = createDashboard(fixture.environment, { basePath: "/admin/agents/" });
    const at = (path: string) => mounted.handle(new Request(new URL(`${path}?token=${mounted.token}`, origin)));
    expect((await at("/")).status).toBe(404);
    expect((await at("/admin/agents")).status).toBe(200);
    const page = await (await at("/admin/agents/")).text();
    expect(page).toContain(`href="/admin/agents/assets/app.css?token=${mounted.token}"`);
    expect(page).toContain('action="/admin/agents/"'); // the filter
    expect(mounted.urlFor("http://127.0.0.1:3000/")).toBe(`http://127.0.0.1:3000/admin/agents/?token=${mounted.token}`);
  });

  it("lists with counts per status and filters by status, agent and id", async () => {
    const waiting = await waitingRefund({ orderId: "1" });
    const done = await fixture.start("hello");
    await fixture.until(done, ended);
    const counts = await fixture.environment.admin.counts();
    expect(counts.byStatus).toMatchObject({ suspended: 1, terminal: 1, completed: 1 });
    const list = await (await get("/?status=completed")).text();
    expect(list).toContain(done);
    expect(list).not.toContain(`<tr data-execution="${waiting.executionId}"`);
    const searched = await (await get(`/?q=${done.slice(0, 8)}`)).text();
    expect(searched).toContain(`<tr data-execution="${done}"`);
    expect(searched).not.toContain(`<tr data-execution="${waiting.executionId}"`);
    const admin = fixture.environment.admin;
    expect((await admin.executions({ agentId: "agent-1" })).map((row) => row.executionId)).toEqual([waiting.executionId]);
    expect(await admin.executions({ since: Date.now() + 60_000 })).toEqual([]);
    await expect(admin.executions({ status: "nope" as never })).rejects.toThrow(/unknown status/);
  });
});
