// The dashboard as a place to work (decision 0083), through its handler:
// talk to an agent and read the conversation, decide with context (edited
// arguments, a response, a rejection; a typed wait's form), who decided,
// and where an execution's time went. The same in Chromium:
// test/ui/work.slow.test.ts.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DashboardOptions } from "../../host/ui/index.js";
import { openFixture } from "./fixture.js";
import { openWorkFixture, type WorkFixture } from "./work-fixture.js";

const origin = "http://127.0.0.1:4100";
let fixture: WorkFixture;

async function open(options: DashboardOptions = {}): Promise<void> {
  fixture = await openWorkFixture({ identify: (request) => request.headers.get("x-user") ?? undefined, ...options });
}
afterEach(async () => {
  await fixture?.close();
});

async function get(path: string): Promise<{ status: number; body: string }> {
  const url = new URL(path, origin);
  url.searchParams.set("token", fixture.dashboard.token);
  const response = await fixture.dashboard.handle(new Request(url));
  return { status: response.status, body: await response.text() };
}

async function post(
  action: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; location: URL | undefined; body: string }> {
  const response = await fixture.dashboard.handle(
    new Request(new URL(`/actions/${action}`, origin), {
      method: "POST",
      headers: { origin, "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams({ token: fixture.dashboard.token, ...fields }).toString(),
    }),
  );
  const location = response.headers.get("location");
  return { status: response.status, location: location === null ? undefined : new URL(location, origin), body: await response.text() };
}

/** Starts "support" with `message` from the page; the conversation and execution ids. */
async function talk(message: string, conversationId?: string): Promise<{ conversationId: string; executionId: string }> {
  const sent = await post("start", { definition: "support", message, ...(conversationId !== undefined ? { conversationId } : {}) });
  expect(sent.status).toBe(303);
  expect(sent.location!.searchParams.get("error")).toBeNull();
  const id = decodeURIComponent(/^\/conversations\/(.+)$/.exec(sent.location!.pathname)![1]!);
  const [row] = await fixture.environment.admin.executions({ agentId: id, limit: 1 });
  return { conversationId: id, executionId: row!.executionId };
}

const suspended = (status: string) => status === "suspended";
const ended = (status: string) => status === "terminal";

describe("talking to an agent", () => {
  beforeEach(() => open());

  it("lists the definitions, starts a conversation, and shows it as a transcript with the definition's name", async () => {
    const page = await get("/talk");
    expect(page.body).toContain('<option value="support">support</option>');
    const { conversationId, executionId } = await talk("hello <b>there</b>");
    await fixture.until(executionId, ended);
    await talk("and again", conversationId);
    const [latest] = await fixture.environment.admin.executions({ agentId: conversationId, limit: 1 });
    await fixture.until(latest!.executionId, ended);
    const conversation = await get(`/conversations/${conversationId}`);
    expect(conversation.body).toContain(`<b class="definition">support</b> · conversation <code>${conversationId}</code>`);
    const transcript = conversation.body.slice(conversation.body.indexOf('<ol class="transcript">'));
    expect(transcript.indexOf("hello &lt;b&gt;there&lt;/b&gt;")).toBeGreaterThan(0);
    expect(transcript.indexOf("You said: hello &lt;b&gt;there&lt;/b&gt;.")).toBeGreaterThan(transcript.indexOf("hello &lt;b&gt;there"));
    expect(transcript.indexOf("You said: and again.")).toBeGreaterThan(transcript.indexOf("You said: hello"));
    expect(conversation.body).toContain('name="conversationId" value="' + conversationId + '"');
    // The execution page names the definition beside the conversation id, linked to the conversation.
    expect((await get(`/executions/${executionId}`)).body).toContain(`<b class="definition">support</b> · <a class="conversation"`);
  });

  it("refuses an empty message and an unknown definition with a message, and starts nothing", async () => {
    const empty = await post("start", { definition: "support", message: "  " });
    expect(empty.location!.pathname).toBe("/talk");
    expect(empty.location!.searchParams.get("error")).toContain("write a message");
    const unknown = await post("start", { definition: "billing", message: "hi" });
    expect(unknown.location!.searchParams.get("error")).toMatch(/no definition "billing"/);
    expect(await fixture.environment.admin.executions()).toEqual([]);
  });
});

describe("deciding with context", () => {
  beforeEach(() => open());

  async function waitingRefund(): Promise<{ executionId: string; approvalId: string; argumentsHash: string; callId: string }> {
    const { executionId } = await talk("Refund my order, it arrived broken");
    await fixture.until(executionId, suspended);
    const [pending] = await fixture.environment.admin.approvals();
    return {
      executionId,
      approvalId: pending!.request.approvalId,
      argumentsHash: pending!.request.argumentsHash,
      callId: pending!.request.toolCalls[0]!.callId,
    };
  }

  it("shows what the user asked and what the model said and reasoned, with the arguments editable", async () => {
    const { executionId, callId } = await waitingRefund();
    const card = (await get(`/executions/${executionId}`)).body;
    expect(card).toMatch(/<li class="turn user"><span class="who">user<\/span> Refund my order, it arrived broken<\/li>/);
    expect(card).toContain("reasoning: The parcel arrived damaged; a refund is fair.");
    expect(card).toContain('<blockquote class="model-text">I will refund order 42.</blockquote>');
    expect(card).toContain(`name="input:${callId}"`);
    expect(card).toContain("&quot;amount&quot;: 80");
    // The list shows the same card, context included, and names the definition beside the conversation.
    const list = (await get("/")).body;
    expect(list).toContain(`name="input:${callId}"`);
    expect(list).toContain('<blockquote class="model-text">I will refund order 42.</blockquote>');
    expect(list).toMatch(/<td><b class="definition">support<\/b> · <a class="conversation" href="\/conversations\/chat-/);
  });

  it("approves with edited arguments and records who decided, shown in the timeline", async () => {
    const { executionId, approvalId, argumentsHash, callId } = await waitingRefund();
    const decided = await post(
      "decide",
      { executionId, approvalId, argumentsHash, decision: "approve", reason: "partial refund", [`input:${callId}`]: '{"orderId": "42", "amount": 30}' },
      { "x-user": "ana@support" },
    );
    expect(decided.location!.searchParams.get("notice")).toBe(`approved execution ${executionId} with edited arguments (as ana@support); it goes on`);
    await fixture.until(executionId, ended);
    expect((await fixture.environment.execution(executionId))!.output).toBe('Done: {"orderId":"42","refunded":30}');
    const page = (await get(`/executions/${executionId}`)).body;
    expect(page).toContain('<b class="ok-text">approved with edited arguments</b> by <b class="decided-by">ana@support</b>');
  });

  it("refuses edited arguments that are not JSON, or that the tool's schema refuses, deciding nothing", async () => {
    const { executionId, approvalId, argumentsHash, callId } = await waitingRefund();
    const broken = await post("decide", { executionId, approvalId, argumentsHash, decision: "approve", [`input:${callId}`]: '{"orderId": "42",' });
    expect(broken.location!.searchParams.get("error")).toMatch(/the arguments of refund \(call .*\) must be JSON: /);
    const tooMuch = await post("decide", {
      executionId,
      approvalId,
      argumentsHash,
      decision: "approve",
      [`input:${callId}`]: '{"orderId": "42", "amount": 500}',
    });
    expect(tooMuch.location!.searchParams.get("error")).toMatch(/^not decided: \[INVALID_INPUT\] .*amount: Too big.*the wait is still pending$/);
    expect((await fixture.environment.execution(executionId))!.status).toBe("suspended");
  });

  it("responds in place of the tool, and rejects with a reason", async () => {
    const first = await waitingRefund();
    const responded = await post("decide", { ...first, decision: "respond", respond: '{"refunded": 0, "note": "store credit instead"}' });
    expect(responded.location!.searchParams.get("notice")).toContain("responded in place of the tool");
    await fixture.until(first.executionId, ended);
    expect((await fixture.environment.execution(first.executionId))!.output).toBe('Done: {"refunded":0,"note":"store credit instead"}');
    const second = await waitingRefund();
    // A form returns to the dashboard page it names, never elsewhere.
    const outside = await post("decide", { ...second, decision: "maybe", back: "//elsewhere.example/x" });
    expect(outside.location!.origin).toBe(origin);
    expect(outside.location!.pathname).toBe(`/executions/${second.executionId}`);
    expect(outside.location!.searchParams.get("error")).toContain('got "maybe"');
    const rejected = await post("decide", { ...second, decision: "reject", reason: "no receipt", back: "/conversations/anywhere" });
    expect(rejected.location!.pathname).toBe("/conversations/anywhere");
    expect(rejected.location!.searchParams.get("notice")).toContain("rejected");
    await fixture.until(second.executionId, ended);
    expect((await get(`/executions/${second.executionId}`)).body).toContain('<b class="bad-text">rejected</b> — reason: <q>no receipt</q>');
  });

  it("gives a typed wait its value through a form built from its schema; a refused value leaves it waiting", async () => {
    const { executionId } = await talk("When can you deliver?");
    await fixture.until(executionId, suspended);
    const [pending] = await fixture.environment.admin.approvals();
    const page = (await get(`/executions/${executionId}`)).body;
    expect(page).toContain('<input type="text" name="field:date" required');
    expect(page).toContain('<input type="checkbox" name="field:rush" value="true"');
    expect(page).toContain('<select name="field:slot"');
    expect(page).toContain('<input type="number" name="field:floor" step="1" required');
    expect(page).toMatch(/note <span class="muted">\(optional\)<\/span>/);
    const base = { executionId, approvalId: pending!.request.approvalId, argumentsHash: pending!.request.argumentsHash, decision: "value" };
    const refused = await post("decide", { ...base, "field:date": "next week", "field:slot": "morning", "field:floor": "2" });
    expect(refused.location!.searchParams.get("error")).toMatch(/not decided: .*INVALID_INPUT.*YYYY-MM-DD/);
    expect((await fixture.environment.execution(executionId))!.status).toBe("suspended");
    const notNumber = await post("decide", { ...base, "field:date": "2027-03-01", "field:slot": "morning", "field:floor": "two" });
    expect(notNumber.location!.searchParams.get("error")).toBe('"floor" must be a number, got "two"');
    const given = await post(
      "decide",
      { ...base, "field:date": "2027-03-01", "field:rush": "true", "field:slot": "afternoon", "field:floor": "3" },
      { "x-user": "bo" },
    );
    expect(given.location!.searchParams.get("notice")).toContain("answered");
    await fixture.until(executionId, ended);
    expect((await fixture.environment.execution(executionId))!.output).toBe('Done: {"date":"2027-03-01","rush":true,"slot":"afternoon","floor":3}');
    expect((await get(`/executions/${executionId}`)).body).toContain('<b class="ok-text">answered</b> by <b class="decided-by">bo</b>');
  });
});

describe("who decides", () => {
  it("refuses an action when identify throws or answers something else, deciding nothing", async () => {
    await open({
      identify: (request) => {
        const user = request.headers.get("x-user");
        if (user === "boom") throw new Error("session expired");
        return user === "long" ? "x".repeat(300) : (user ?? undefined);
      },
    });
    const { executionId } = await talk("Refund it");
    await fixture.until(executionId, suspended);
    const [pending] = await fixture.environment.admin.approvals();
    const fields = { executionId, approvalId: pending!.request.approvalId, decision: "approve" };
    const thrown = await post("decide", fields, { "x-user": "boom" });
    expect(thrown.status).toBe(403);
    expect(thrown.body).toContain("could not identify who acts (session expired)");
    expect((await post("decide", fields, { "x-user": "long" })).status).toBe(403);
    expect((await fixture.environment.execution(executionId))!.status).toBe("suspended");
    await expect(openWorkFixture({ identify: "ana" as never })).rejects.toThrow(/identify must be a function/);
  });
});

describe("where the time went", () => {
  beforeEach(() => open());

  it("shows each model call and tool batch with its duration, model, settings and tokens; the prompt folded", async () => {
    const { executionId } = await talk("Refund my order");
    await fixture.until(executionId, suspended);
    const [pending] = await fixture.environment.admin.approvals();
    await (await fixture.environment.admin.decide(executionId, { approvalId: pending!.request.approvalId, approved: true })).result;
    const page = (await get(`/executions/${executionId}`)).body;
    const waterfall = page.slice(page.indexOf('<section id="waterfall">'), page.indexOf('<section id="timeline">'));
    expect(waterfall.match(/<tr class="span model"/g)).toHaveLength(2);
    expect(waterfall.match(/<tr class="span tools"/g)).toHaveLength(1);
    expect(waterfall.match(/<tr class="span wait"/g)).toHaveLength(1);
    expect(waterfall).toContain("temperature 0.2");
    expect(waterfall).toMatch(/\d+ in · \d+ out/);
    expect(waterfall).toMatch(/<rect class="model" x="\d+" y="1" width="\d+"/);
    expect(waterfall).toContain('<details class="prompt"><summary class="small">prompt · 3 messages sent</summary>');
    expect(waterfall).toContain("You help customers with their orders.");
  });
});

describe("edited arguments with masked fields", () => {
  it("keeps the stored value of a field left as the masked ***, and runs the call with the other edits", async () => {
    const masked = await openFixture();
    try {
      const executionId = await masked.start("refund", { orderId: "42", apiKey: "sk-live-secret" });
      await masked.until(executionId, (status) => status === "suspended");
      const [pending] = await masked.environment.admin.approvals();
      const callId = pending!.request.toolCalls[0]!.callId;
      const page = await (await masked.dashboard.handle(new Request(`${origin}/executions/${executionId}?token=${masked.dashboard.token}`))).text();
      expect(page).not.toContain("sk-live-secret");
      const response = await masked.dashboard.handle(
        new Request(`${origin}/actions/decide`, {
          method: "POST",
          headers: { origin, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            token: masked.dashboard.token,
            executionId,
            approvalId: pending!.request.approvalId,
            argumentsHash: pending!.request.argumentsHash,
            decision: "approve",
            [`input:${callId}`]: '{"orderId": "43", "apiKey": "***"}',
          }).toString(),
        }),
      );
      expect(new URL(response.headers.get("location")!, origin).searchParams.get("notice")).toContain("with edited arguments");
      await masked.until(executionId, (status) => status === "terminal");
      expect(masked.refunds).toEqual([{ input: { orderId: "43", apiKey: "sk-live-secret" }, idempotencyKey: expect.any(String) }]);
    } finally {
      await masked.close();
    }
  });
});
