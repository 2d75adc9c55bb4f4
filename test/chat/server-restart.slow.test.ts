// A chat stream resumed after a kill -9 of the server (docs/decisions/0036):
// the example server (examples/chat-server.ts) runs in a child process that
// owns the store; a client reads the answer's server-sent events, the
// server is killed (SIGKILL) mid-answer — while the model streams its text,
// or while a tool runs — and started again on the same store. It recovers
// the execution, and the client reconnects with the id of the last event it
// saw (`Last-Event-ID`) and gets the rest: stitched together, the AI SDK's
// reader builds the same message as a full replay, no chunk twice, none
// missing.

import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { UIMessageChunk } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { childNodeFlags } from "../support/node-flags.js";
import { temporaryStorePath } from "../runtime/helpers.js";
import { messageOf, readServerSentEvents, type ServerSentEvent } from "../support/ui-stream.js";

const here = dirname(fileURLToPath(import.meta.url));
const serverScript = join(here, "../../examples/chat-server.ts");
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

interface Started {
  readonly child: ChildProcess;
  readonly url: string;
}

async function startServer(store: string): Promise<Started> {
  const child = spawn(process.execPath, [...childNodeFlags, "--import", "tsx", serverScript], {
    env: { ...process.env, PHRONOMY_STORE: store, PORT: "0", CHAT_PACING_MS: "150" },
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
    child.on("exit", (code, signal) => reject(new Error(`the server exited (${code ?? signal}) before listening: ${stderr}`)));
  });
  return { child, url };
}

async function killHard(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

interface Event {
  readonly id: string | undefined;
  readonly chunk: UIMessageChunk;
}

/** The UI message chunks among the server-sent events, until `stop` says so or the stream ends. */
async function readEvents(response: Response, stop: (event: Event) => boolean = () => false): Promise<Event[]> {
  const chunkOf = (event: ServerSentEvent): Event | undefined =>
    event.data === undefined || event.data === "[DONE]" ? undefined : { id: event.id, chunk: JSON.parse(event.data) as UIMessageChunk };
  const events = await readServerSentEvents(response, (event) => {
    const chunk = chunkOf(event);
    return chunk !== undefined && stop(chunk);
  });
  return events.flatMap((event) => chunkOf(event) ?? []);
}

/** Starts a server, asks, reads until `killAt`, kills it, starts another
 * and resumes from the last event id; returns both parts and a replay. */
async function killAndResume(killAt: (event: Event) => boolean) {
  const store = await temporaryStorePath();
  const first = await startServer(store);
  const posted = await fetch(`${first.url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: "chat-1", messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "Where is order 42?" }] }] }),
  });
  const executionId = posted.headers.get("x-phronomy-execution-id")!;
  const before = await readEvents(posted, killAt);
  expect(killAt(before.at(-1)!), "the kill point was reached").toBe(true);
  await killHard(first.child);

  const second = await startServer(store);
  const lastId = before.at(-1)!.id!;
  const resumed = await fetch(`${second.url}/api/chat/chat-1/stream?executionId=${executionId}`, { headers: { "Last-Event-ID": lastId } });
  expect(resumed.status).toBe(200);
  const after = await readEvents(resumed);
  const replay = await readEvents(await fetch(`${second.url}/api/chat/chat-1/stream?executionId=${executionId}&resumeAt=0`));
  return { before, after, replay, lastId };
}

/** The stitched events: the resumed stream's own `start` left out. */
function stitched(before: readonly Event[], after: readonly Event[]): UIMessageChunk[] {
  return [...before, ...after.filter((event) => event.chunk.type !== "start")].map((event) => event.chunk);
}

function expectNoIdTwice(before: readonly Event[], after: readonly Event[]): void {
  const ids = [...before, ...after].filter((event) => event.chunk.type !== "start").map((event) => event.id);
  expect(new Set(ids).size, `ids ${ids.join(" ")}`).toBe(ids.length);
}

const FINAL_TEXT = "Your blue kettle (order 42) is out for delivery with PostNL.";

describe("a chat stream resumed after kill -9 of the server", () => {
  it("killed while a tool runs: the restarted server re-runs it, the client resumes after its last event", async () => {
    const { before, after, replay } = await killAndResume((event) => event.chunk.type === "tool-input-available");
    expect(after.at(-1)!.chunk).toMatchObject({ type: "finish", finishReason: "stop" });
    expect(after.map((event) => event.chunk.type)).toContain("tool-output-available");
    expectNoIdTwice(before, after);
    const message = await messageOf(stitched(before, after));
    expect(message).toEqual(await messageOf(replay.map((event) => event.chunk)));
    expect(message.parts.filter((part) => part.type !== "step-start")).toEqual([
      expect.objectContaining({ type: "text", text: "Let me look up order 42 for you.", state: "done" }),
      expect.objectContaining({ type: "tool-lookupOrder", state: "output-available", output: expect.objectContaining({ item: "blue kettle" }) }),
      expect.objectContaining({ type: "text", text: FINAL_TEXT, state: "done" }),
    ]);
  });

  it("killed inside the model's streamed text: the model is called again, the half text is dropped (reset-step), nothing doubles", async () => {
    const { before, after, replay, lastId } = await killAndResume((event) => event.chunk.type === "text-delta");
    expect(lastId, "the kill came inside a streamed, not yet durable, text").toMatch(/^\d+\.t\d+$/);
    expect(after.map((event) => event.chunk.type)).toContain("reset-step");
    expect(after.at(-1)!.chunk).toMatchObject({ type: "finish", finishReason: "stop" });
    expectNoIdTwice(before, after);
    const message = await messageOf(stitched(before, after));
    expect(message).toEqual(await messageOf(replay.map((event) => event.chunk)));
    expect(message.parts.filter((part) => part.type !== "step-start")).toEqual([
      expect.objectContaining({ type: "text", text: "Let me look up order 42 for you.", state: "done" }),
      expect.objectContaining({ type: "tool-lookupOrder", state: "output-available" }),
      expect.objectContaining({ type: "text", text: FINAL_TEXT, state: "done" }),
    ]);
  });
});
