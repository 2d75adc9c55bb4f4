// kill -9 of a process waiting for an event (docs/decisions/0077) or a
// person's typed answer (0075): the wait is committed in process A, A is
// killed with SIGKILL; process B opens the store and recovers the wait; a
// signal (or a value) sent from a third party — a visitor of the same
// SQLite store: a webhook handler, the CLI — is filed for B, which resumes
// the execution once and completes it.

import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { childNodeFlags } from "../support/node-flags.js";
import { temporaryStorePath } from "../runtime/helpers.js";
import type { EventChildConfig, EventChildLine } from "./event-child.js";

const childPath = join(import.meta.dirname, "event-child.ts");
const repositoryRoot = join(import.meta.dirname, "..", "..");
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

interface Spawned {
  readonly process: ChildProcess;
  line(type: EventChildLine["type"], timeoutMs?: number): Promise<EventChildLine>;
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

function spawnChild(config: EventChildConfig): Spawned {
  const child = spawn(process.execPath, [...childNodeFlags, "--import", "tsx", childPath, JSON.stringify(config)], {
    cwd: repositoryRoot,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const lines: EventChildLine[] = [];
  let partial = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (text: string) => {
    const parts = (partial + text).split("\n");
    partial = parts.pop() ?? "";
    for (const part of parts) if (part.trim() !== "") lines.push(JSON.parse(part) as EventChildLine);
  });
  child.stderr!.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return {
    process: child,
    stderr: () => stderr,
    exited: () => exit,
    async line(type, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find((line) => line.type === type);
        if (found !== undefined) return found;
        if (Date.now() > until || child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`the event child printed no "${type}" line (lines: ${JSON.stringify(lines)}; stderr: ${stderr})`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

describe("an event wait across kill -9", () => {
  it("the waiting process killed, a signal sent from a visitor, the restarted process resumes it once and completes", async () => {
    const store = await temporaryStorePath();
    const waiting = spawnChild({ store, mode: "wait" });
    const line = (await waiting.line("waiting")) as Extract<EventChildLine, { type: "waiting" }>;
    expect(line.key).toBe("payment:42");
    waiting.process.kill("SIGKILL");
    expect((await waiting.exited()).signal).toBe("SIGKILL");

    const serving = spawnChild({ store, mode: "serve", executionId: line.executionId });
    expect(await serving.line("recovered")).toEqual({ type: "recovered", statuses: ["suspended"] });
    const visitor = await Phronomy.open({ store, visitor: true });
    try {
      const sent = await visitor.signal("payment:42", { amount: 25 });
      expect(sent).toMatchObject({ status: "resumed", executionId: line.executionId, agentId: "checkout" });
      // Once: the wait is gone, a second signal is kept for a next wait, never given to this one.
      expect(await visitor.signal("payment:42", { amount: 26 })).toMatchObject({ status: "stored" });
    } finally {
      await visitor.close();
    }
    expect(await serving.line("done")).toEqual({ type: "done", output: 'paid {"amount":25}' });
    expect(await serving.exited(), serving.stderr()).toEqual({ code: 0, signal: null });
    const check = await Phronomy.open({ store });
    try {
      const steps = (await check.timeline(line.executionId)).filter((step) => step.kind === "approval_decided");
      expect(steps).toHaveLength(1);
      expect(await check.execution(line.executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
    } finally {
      await check.close();
    }
  }, 90_000);

  it("a typed wait: the waiting process killed, a value refused then given from a visitor, the restarted process resumes it once", async () => {
    const store = await temporaryStorePath();
    const waiting = spawnChild({ store, mode: "wait", wait: "input" });
    const line = (await waiting.line("waiting")) as Extract<EventChildLine, { type: "waiting" }>;
    waiting.process.kill("SIGKILL");
    expect((await waiting.exited()).signal).toBe("SIGKILL");

    const serving = spawnChild({ store, mode: "serve", executionId: line.executionId, wait: "input" });
    expect(await serving.line("recovered")).toEqual({ type: "recovered", statuses: ["suspended"] });
    const visitor = await Phronomy.open({ store, visitor: true });
    try {
      // Checked by the owner against the response schema: refused, the wait stays.
      const refused = await visitor.admin.decide(line.executionId, { approvalId: line.waitId, value: { date: "soon" } });
      await expect(refused.result).rejects.toMatchObject({ code: "INVALID_INPUT" });
      const given = await visitor.admin.decide(line.executionId, { approvalId: line.waitId, value: { date: "2027-03-01" } });
      expect((await given.result).output).toBe('delivering {"date":"2027-03-01"}');
    } finally {
      await visitor.close();
    }
    expect(await serving.line("done")).toEqual({ type: "done", output: 'delivering {"date":"2027-03-01"}' });
    expect(await serving.exited(), serving.stderr()).toEqual({ code: 0, signal: null });
    const check = await Phronomy.open({ store });
    try {
      expect((await check.timeline(line.executionId)).filter((step) => step.kind === "approval_decided")).toHaveLength(1);
    } finally {
      await check.close();
    }
  }, 90_000);
});
