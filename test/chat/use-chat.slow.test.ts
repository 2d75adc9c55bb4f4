// The AI SDK's real `useChat` (@ai-sdk/react) in Chromium against README's
// chat section as printed (issue 27, "Done when"). The page
// (test/chat/browser/app.tsx) is bundled by vite and served, with the chat
// routes of README's block, by a Hono server in a child process
// (browser/server.ts) on SQLite, so the test can kill -9 it. Each scenario
// asserts what the page shows (read from the DOM) and what the store holds
// (a visitor of the server's store, the chat's history route, and the
// prompts the scripted model was sent): streaming, approvals approved and
// denied, a reload mid-answer, a kill -9 of the server mid-answer, an
// attachment, regenerate and stop. Answers are held mid-stream by the
// model's gates (browser/paced-model.ts), never by sleeping; every wait is on
// a condition of the page or the store.

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { build } from "vite";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import { exampleText } from "../docs/samples.js";
import { launchChromium } from "../support/chromium.js";
import { childNodeFlags } from "../support/node-flags.js";
import { jokeText, storyReasoning, storyText, wordsBeforeGate } from "./browser/paced-model.js";
import type { ChatPageProbe, PageSnapshot, ShownMessage } from "./browser/page-snapshot.js";

const here = dirname(fileURLToPath(import.meta.url));
const pageSource = join(here, "browser");
const serverScript = join(pageSource, "server.ts");
/** How long a condition of the page may take: generous, for 2 shared cores. */
const waitMs = 90_000;
/** A scenario's own limit: a server start, a bundle load and a restart under load. */
const scenarioMs = 300_000;

let workDirectory: string;
let pageDirectory: string;
let browser: Browser;
let shared: ChatServer;
const children: ChildProcess[] = [];
const pages: Page[] = [];

interface ChatServer {
  readonly child: ChildProcess;
  readonly url: string;
  readonly store: string;
  /** Where the model writes its prompts and looks for its gates. */
  readonly work: string;
}

beforeAll(async () => {
  workDirectory = await mkdtemp(join(tmpdir(), "phronomy-use-chat-"));
  pageDirectory = join(workDirectory, "page");
  // React's JSX through vite's own transform (oxc), no plugin.
  await build({
    root: pageSource,
    configFile: false,
    logLevel: "error",
    oxc: { jsx: { runtime: "automatic" } },
    build: { outDir: pageDirectory, emptyOutDir: true, minify: false },
  });
  browser = await launchChromium();
  shared = await startServer(join(workDirectory, "shared.db"), join(workDirectory, "shared"));
}, scenarioMs);

afterEach(async () => {
  for (const page of pages.splice(0)) await page.close();
});

afterAll(async () => {
  await browser?.close();
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  if (workDirectory) await rm(workDirectory, { recursive: true, force: true });
});

// -- the server ---------------------------------------------------------------------

async function startServer(store: string, work: string): Promise<ChatServer> {
  await mkdir(work, { recursive: true });
  const child = spawn(process.execPath, [...childNodeFlags, "--import", "tsx", serverScript], {
    env: { ...process.env, CHAT_STORE: store, CHAT_PAGE: pageDirectory, CHAT_WORK: work, CHAT_PACING_MS: "100", PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stderr = "";
  child.stderr!.on("data", (piece: Buffer) => {
    stderr += piece.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = "";
    child.stdout!.on("data", (piece: Buffer) => {
      stdout += piece.toString();
      const line = stdout.split("\n").find((candidate) => candidate.startsWith("{"));
      if (line) resolve((JSON.parse(line) as { listening: string }).listening);
    });
    child.on("exit", (code, signal) => reject(new Error(`the chat server exited (${code ?? signal}) before listening: ${stderr}`)));
  });
  return { child, url, store, work };
}

async function killHard(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/** Lets the model's answer held at `gate` go on. */
function openGate(server: ChatServer, gate: string): void {
  writeFileSync(join(server.work, `gate-${gate}`), "");
}

/** The prompts the model was sent (each call's messages), oldest first. */
function promptsSent(server: ChatServer): PromptMessage[][] {
  const file = join(server.work, "prompts.jsonl");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => (JSON.parse(line) as { prompt: PromptMessage[] }).prompt);
}

interface PromptPart {
  readonly type: string;
  readonly text?: string;
  readonly mediaType?: string;
  readonly filename?: string;
  readonly data?: unknown;
  readonly toolName?: string;
  readonly output?: { readonly type: string; readonly reason?: string; readonly value?: unknown };
}

interface PromptMessage {
  readonly role: string;
  readonly content: string | readonly PromptPart[];
}

/** The calls whose prompt holds a user message with `question`. */
function callsAbout(server: ChatServer, question: string): PromptMessage[][] {
  return promptsSent(server).filter((prompt) => prompt.some((message) => message.role === "user" && userText(message) === question));
}

function userText(message: PromptMessage): string {
  return typeof message.content === "string" ? message.content : message.content.map((part) => part.text ?? "").join("");
}

/** The chat's history as the page loads it: `support.conversation(id).messages()`. */
async function history(server: ChatServer, chatId: string): Promise<{ role: string; text: string }[]> {
  const messages = (await (await fetch(`${server.url}/api/chat/${chatId}/messages`)).json()) as { role: string; parts: { type: string; text?: string }[] }[];
  const textOf = (parts: { type: string; text?: string }[]): string => parts.map((part) => (part.type === "text" ? (part.text ?? "") : "")).join("");
  return messages.map((message) => ({ role: message.role, text: textOf(message.parts) }));
}

/** The store's rows of the chat, read by a visitor (the server owns the store). */
async function storedAnswers(server: ChatServer, chatId: string) {
  const visitor: Environment = await Phronomy.open({ store: server.store, visitor: true });
  try {
    return (await visitor.executions({ agentId: chatId })).sort((left, right) => left.createdAt - right.createdAt);
  } finally {
    await visitor.close();
  }
}

// -- the page -----------------------------------------------------------------------

async function openChat(server: ChatServer, chatId: string): Promise<Page> {
  const page = await browser.newPage();
  pages.push(page);
  await page.goto(`${server.url}/?chat=${chatId}`);
  await page.locator("#text").waitFor({ timeout: waitMs });
  return page;
}

/** Reloads the page, or opens the chat on another server, and waits for the chat. */
async function reopen(page: Page, server: ChatServer, chatId: string): Promise<void> {
  await page.goto(`${server.url}/?chat=${chatId}`);
  await page.locator("#text").waitFor({ timeout: waitMs });
}

function snapshot(page: Page): Promise<PageSnapshot> {
  return page.evaluate(() => (globalThis as unknown as { chatPage: ChatPageProbe }).chatPage.snapshot());
}

async function ask(page: Page, text: string): Promise<void> {
  await page.locator("#text").fill(text);
  await page.locator("#send").click();
}

/** Waits until the page satisfies `condition` (polled every 100 ms, up to
 * `waitMs`); returns what it showed then, or fails with what it showed last. */
async function until(page: Page, what: string, condition: (shown: PageSnapshot) => boolean): Promise<PageSnapshot> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const shown = await snapshot(page);
    if (condition(shown)) return shown;
    if (Date.now() > deadline) throw new Error(`the page never showed ${what}; it shows ${JSON.stringify(shown)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const answers = (shown: PageSnapshot): ShownMessage[] => shown.messages.filter((message) => message.role === "assistant");
const lastAnswer = (shown: PageSnapshot): ShownMessage | undefined => answers(shown).at(-1);
/** The story's words before its gate, as the page shows them. */
const storyBeforeGate = (storyText.match(/\S+\s*/g) ?? []).slice(0, wordsBeforeGate).join("");

/** Waits for the page to show `text` as the finished answer, the chat ready again. */
const answered = (page: Page, text: string) => until(page, `the answer "${text}"`, (shown) => lastAnswer(shown)?.text === text && shown.status === "ready");

// -- the scenarios ------------------------------------------------------------------

describe("useChat (@ai-sdk/react) in Chromium, against README's chat routes", () => {
  it("the server serves README's routes as printed", () => {
    expect(exampleText("test/chat/browser/server.ts", "readme")).toBe(exampleText("examples/hono-chat.ts", "readme"));
  });

  it(
    "streams: reasoning, then the text word by word (several states in between), then the whole answer",
    async () => {
      const page = await openChat(shared, "stream-1");
      await page.evaluate(() => (globalThis as unknown as { chatPage: ChatPageProbe }).chatPage.recordAnswer());
      await ask(page, "Tell me a story (gate stream)");
      const held = await until(page, "the story up to its gate", (shown) => lastAnswer(shown)?.text === storyBeforeGate);
      expect(held.status).toBe("streaming");
      openGate(shared, "stream");
      const done = await answered(page, storyText);
      expect(done.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
      // Text streams live; the step's reasoning arrives with the step (README: "text (streamed live with `stream: true`)").
      expect(lastAnswer(done)?.reasoning).toBe(storyReasoning);
      expect(done.error).toBeUndefined();

      const recorded = await page.evaluate(() => (globalThis as unknown as { chatPage: ChatPageProbe }).chatPage.recordedAnswers());
      const between = recorded.filter((text) => text.length > 0 && text !== storyText);
      expect(between.length, `states seen: ${JSON.stringify(recorded)}`).toBeGreaterThanOrEqual(3);
      for (const text of recorded) expect(storyText.startsWith(text), `"${text}" is a beginning of the story`).toBe(true);
      expect(recorded.at(-1)).toBe(storyText);

      const [row] = await storedAnswers(shared, "stream-1");
      expect(row).toMatchObject({ status: "terminal", outcome: "completed" });
      expect(await history(shared, "stream-1")).toEqual([
        { role: "user", text: "Tell me a story (gate stream)" },
        { role: "assistant", text: storyText },
      ]);
    },
    scenarioMs,
  );

  it(
    "approves: the tool asks for approval, Approve continues the same assistant message to the final text",
    async () => {
      const page = await openChat(shared, "approve-1");
      await ask(page, "Please refund order 42 (approve)");
      await page.locator(".tool[data-state='approval-requested'] button.approve").click({ timeout: waitMs });
      const done = await answered(page, "Order 42 is refunded.");
      expect(answers(done)).toHaveLength(1);
      expect(lastAnswer(done)!.tools).toEqual([
        { tool: "tool-issueRefund", state: "output-available", output: JSON.stringify({ refunded: true, orderId: "42", amountCents: 3990 }) },
      ]);
      expect(done.error).toBeUndefined();

      const rows = await storedAnswers(shared, "approve-1");
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: "terminal", outcome: "completed" });
      expect(lastAnswer(done)!.id).toBe(rows[0]!.executionId);
      const [, afterApproval] = callsAbout(shared, "Please refund order 42 (approve)");
      const result = toolResults(afterApproval!).find((part) => part.toolName === "issueRefund");
      expect(result?.output).toMatchObject({ type: "json", value: { refunded: true } });
    },
    scenarioMs,
  );

  it(
    "a typed wait: the page's form answers it (addToolOutput); a value its schema refuses shows the error, the good one ends the same message",
    async () => {
      const page = await openChat(shared, "wait-1");
      await ask(page, "Which delivery date suits me?");
      await page.locator("form.wait input.wait-value").fill("next week", { timeout: waitMs });
      await page.locator("form.wait button.wait-answer").click({ timeout: waitMs });
      const refused = await until(page, "the refusal", (shown) => shown.error !== undefined);
      expect(refused.error).toContain("INVALID_INPUT");
      expect((await storedAnswers(shared, "wait-1"))[0]).toMatchObject({ status: "suspended" });

      await page.locator("form.wait input.wait-value").fill("2027-03-01", { timeout: waitMs });
      await page.locator("form.wait button.wait-answer").click({ timeout: waitMs });
      const done = await answered(page, "Booked for 2027-03-01.");
      expect(answers(done)).toHaveLength(1);
      expect(lastAnswer(done)!.tools).toEqual([{ tool: "tool-askDeliveryDate", state: "output-available", output: JSON.stringify({ date: "2027-03-01" }) }]);
      expect(done.error).toBeUndefined();
      const rows = await storedAnswers(shared, "wait-1");
      expect(rows.map((row) => row.outcome)).toEqual(["completed"]);
    },
    scenarioMs,
  );

  it(
    "denies: Deny reaches the model as a declined call with the reason; the same message ends with its answer",
    async () => {
      const page = await openChat(shared, "deny-1");
      await ask(page, "Please refund order 42 (deny)");
      await page.locator(".tool[data-state='approval-requested'] button.deny").click({ timeout: waitMs });
      const done = await answered(page, "The refund was not made: the customer changed their mind.");
      expect(answers(done)).toHaveLength(1);
      expect(lastAnswer(done)!.tools.map((tool) => tool.state)).toEqual(["output-denied"]);

      const rows = await storedAnswers(shared, "deny-1");
      expect(rows.map((row) => row.outcome)).toEqual(["completed"]);
      const [, afterDecline] = callsAbout(shared, "Please refund order 42 (deny)");
      const result = toolResults(afterDecline!).find((part) => part.toolName === "issueRefund");
      expect(result?.output).toEqual({ type: "execution-denied", reason: "the customer changed their mind" });
    },
    scenarioMs,
  );

  it(
    "resumes mid-answer: a reload while the answer streams shows it going on and finished once",
    async () => {
      const page = await openChat(shared, "reload-1");
      await ask(page, "Tell me a story (gate reload)");
      await until(page, "the story up to its gate", (shown) => lastAnswer(shown)?.text === storyBeforeGate);
      await page.reload();
      await page.locator("#text").waitFor({ timeout: waitMs });
      const resumed = await until(page, "the resumed story up to its gate", (shown) => lastAnswer(shown)?.text === storyBeforeGate);
      expect(resumed.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
      openGate(shared, "reload");
      const done = await answered(page, storyText);
      expect(done.messages.map((message) => [message.role, message.text])).toEqual([
        ["user", "Tell me a story (gate reload)"],
        ["assistant", storyText],
      ]);
      expect(lastAnswer(done)!.reasoning).toBe(storyReasoning);

      // Loaded again once it ended: the history, nothing to resume.
      await reopen(page, shared, "reload-1");
      const loaded = await until(page, "the history", (shown) => shown.messages.length === 2 && shown.status === "ready");
      expect(loaded.messages.map((message) => [message.role, message.text])).toEqual([
        ["user", "Tell me a story (gate reload)"],
        ["assistant", storyText],
      ]);
      expect(callsAbout(shared, "Tell me a story (gate reload)")).toHaveLength(1);
      expect((await storedAnswers(shared, "reload-1")).map((row) => row.outcome)).toEqual(["completed"]);
    },
    scenarioMs,
  );

  it(
    "survives kill -9 of the server mid-answer: restarted, the reloaded page shows the answer finished once",
    async () => {
      const first = await startServer(join(workDirectory, "killed.db"), join(workDirectory, "killed"));
      const page = await openChat(first, "kill-1");
      await ask(page, "Tell me a story (gate kill)");
      await until(page, "the story up to its gate", (shown) => lastAnswer(shown)?.text === storyBeforeGate);
      await killHard(first.child);

      const second = await startServer(first.store, first.work);
      await reopen(page, second, "kill-1");
      // The page resumed the recovered answer while the model is held at its gate: the recovered
      // call streams (its start kept `stream: true`), and a stream that attaches mid-call gets the
      // call's text so far, then each delta (decision 0072), so the story shows up to the gate.
      const resumed = await until(page, "the recovered answer, streamed up to its gate", (shown) => lastAnswer(shown)?.text === storyBeforeGate);
      expect(resumed.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
      await expect.poll(() => callsAbout(second, "Tell me a story (gate kill)").length, { timeout: waitMs }).toBe(2); // called again after the restart
      openGate(second, "kill");
      const done = await answered(page, storyText);
      expect(done.messages.map((message) => [message.role, message.text])).toEqual([
        ["user", "Tell me a story (gate kill)"],
        ["assistant", storyText],
      ]);
      expect(done.error).toBeUndefined();

      const rows = await storedAnswers(second, "kill-1");
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: "terminal", outcome: "completed" });
      expect(await history(second, "kill-1")).toEqual([
        { role: "user", text: "Tell me a story (gate kill)" },
        { role: "assistant", text: storyText },
      ]);
      await killHard(second.child);
    },
    scenarioMs,
  );

  it(
    "attaches files: the model receives each as a file part with its media type",
    async () => {
      const page = await openChat(shared, "files-1");
      const png = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");
      await page.locator("#files").setInputFiles([
        { name: "note.txt", mimeType: "text/plain", buffer: Buffer.from("hello kettle") },
        { name: "dot.png", mimeType: "image/png", buffer: png },
      ]);
      await ask(page, "What are these?");
      const done = await answered(page, "I received note.txt (text/plain), dot.png (image/png).");
      expect(done.messages[0]).toMatchObject({ role: "user", text: "What are these?", files: ["note.txt (text/plain)", "dot.png (image/png)"] });

      const [prompt] = callsAbout(shared, "What are these?");
      const asked = prompt!.findLast((message) => message.role === "user")!;
      const files = (asked.content as PromptPart[]).filter((part) => part.type === "file");
      expect(files.map((file) => [file.filename, file.mediaType])).toEqual([
        ["note.txt", "text/plain"],
        ["dot.png", "image/png"],
      ]);
      expect(JSON.stringify(files[0]!.data)).toContain(Buffer.from("hello kettle").toString("base64"));
      const [row] = await storedAnswers(shared, "files-1");
      expect(JSON.stringify(row!.input)).toContain('"mediaType":"image/png"');

      // Loaded again: the history shows the message as it was sent — its id and its attachments (decision 0081).
      const sent = done.messages[0]!;
      await reopen(page, shared, "files-1");
      const loaded = await until(page, "the history", (shown) => shown.messages.length === 2 && shown.status === "ready");
      expect(loaded.messages[0]).toMatchObject({ role: "user", id: sent.id, text: "What are these?", files: sent.files });
    },
    scenarioMs,
  );

  it(
    "regenerates: the model sees the user's turn once and the page shows one answer",
    async () => {
      const question = "Tell me a joke (regenerate)";
      const page = await openChat(shared, "regenerate-1");
      await ask(page, question);
      await answered(page, jokeText);
      await page.locator("#regenerate").click();
      await expect.poll(() => callsAbout(shared, question).length, { timeout: waitMs }).toBe(2);
      const done = await answered(page, jokeText);
      expect(done.messages.map((message) => [message.role, message.text])).toEqual([
        ["user", question],
        ["assistant", jokeText],
      ]);

      const regenerated = callsAbout(shared, question)[1]!;
      expect(regenerated.filter((message) => message.role === "user").map(userText), "the user's turn, once").toEqual([question]);
      expect(
        regenerated.filter((message) => message.role === "assistant"),
        "no earlier answer",
      ).toEqual([]);
      expect(await history(shared, "regenerate-1"), "the history: one question, one answer").toEqual([
        { role: "user", text: question },
        { role: "assistant", text: jokeText },
      ]);

      // Reloaded, the page regenerates again: the loaded messages keep their ids, the model still sees the turn once.
      await reopen(page, shared, "regenerate-1");
      const loaded = await until(page, "the history", (shown) => shown.messages.length === 2 && shown.status === "ready");
      expect(loaded.messages[0]!.id, "the user message keeps the page's id").toBe(done.messages[0]!.id);
      await page.locator("#regenerate").click();
      await expect.poll(() => callsAbout(shared, question).length, { timeout: waitMs }).toBe(3);
      const again = await answered(page, jokeText);
      expect(again.messages.map((message) => [message.role, message.text])).toEqual([
        ["user", question],
        ["assistant", jokeText],
      ]);
      const thirdPrompt = callsAbout(shared, question)[2]!;
      expect(thirdPrompt.filter((message) => message.role === "user").map(userText), "the user's turn, once").toEqual([question]);
      expect((await storedAnswers(shared, "regenerate-1")).map((row) => row.outcome)).toEqual(["completed", "completed", "completed"]);
    },
    scenarioMs,
  );

  it(
    "stops: Stop ends the answer on the page and cancels it on the server",
    async () => {
      const page = await openChat(shared, "stop-1");
      await ask(page, "Tell me a story (gate stop)");
      await until(page, "the story up to its gate", (shown) => lastAnswer(shown)?.text === storyBeforeGate);
      await page.locator("#stop").click();
      await until(page, "the chat ready again", (shown) => shown.status === "ready");
      await expect.poll(async () => (await storedAnswers(shared, "stop-1"))[0]?.status, { timeout: waitMs }).toBe("terminal");
      const [row] = await storedAnswers(shared, "stop-1");
      expect(row).toMatchObject({ outcome: "failed", error: expect.objectContaining({ code: "CANCELLED" }) });
      // Loaded again: nothing to resume, and the story never went past its gate.
      await reopen(page, shared, "stop-1");
      const loaded = await until(page, "the history", (shown) => shown.status === "ready" && shown.messages.length > 0);
      expect(loaded.messages.some((message) => message.text === storyText)).toBe(false);
    },
    scenarioMs,
  );
});

function toolResults(prompt: readonly PromptMessage[]): PromptPart[] {
  return prompt.flatMap((message) => (message.role === "tool" && typeof message.content !== "string" ? [...message.content] : []));
}
