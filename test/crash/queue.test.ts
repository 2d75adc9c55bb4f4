// The queue crash matrix (docs/decisions/0025): three messages sent at once
// to one conversation with onBusy "enqueue" — the first runs (model → tool
// → model → tool → model), two wait in its durable queue — in a child
// process on a real SQLite file, killed with SIGKILL at every kill point it
// reaches in turn: before and after each enqueue, preparation, barrier and
// terminal commit, and inside each tool call. A fresh environment then
// opens the file and defines the agent: the running execution is
// recovered, the queue is read back and run after it. Every message the
// child was told was accepted runs exactly once, in the order sent, with
// every tool effect once; nothing stays queued.

import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { childNodeFlags } from "../support/node-flags.js";
import { expectedAnswer } from "./fixture.js";
import { messageInput, QUEUE_AGENT_ID, type QueueChildConfig, type QueueChildLine } from "./queue-fixture.js";
import { auditKeys, barrierKeys, cleanUp, crashPaths, effectsByExecution, reopen, within } from "./verify.js";

afterEach(cleanUp);

const MESSAGES = 3;
const ANSWER = expectedAnswer(2);
const here = dirname(fileURLToPath(import.meta.url));

interface QueueChild {
  readonly signal: NodeJS.Signals | null;
  readonly code: number | null;
  readonly lines: QueueChildLine[];
  readonly stderr: string;
}

function runQueueChild(config: QueueChildConfig): Promise<QueueChild> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...childNodeFlags, "--import", "tsx", join(here, "queue-child.ts"), JSON.stringify(config)], {
      cwd: join(here, "..", ".."),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const lines = stdout
        .split("\n")
        .filter((line) => line.trim().length > 0)
        .map((line) => JSON.parse(line) as QueueChildLine);
      resolve({ code, signal, lines, stderr });
    });
  });
}

function describeChild(child: QueueChild): string {
  return `child code ${String(child.code)}, signal ${String(child.signal)}\nstdout:\n${child.lines
    .filter((line) => line.type !== "point")
    .map((line) => JSON.stringify(line))
    .join("\n")}\nstderr:\n${child.stderr}`;
}

let tracedPoints: string[] | undefined;

/** Children killed and recovered at the same time (2 cores here). */
const KILLS_AT_ONCE = 2;

async function killAndRecover(index: number, points: readonly string[]): Promise<void> {
  const where = await crashPaths();
  const child = await runQueueChild({ store: where.store, files: where.files, messages: MESSAGES, kill: `point:#${index}` });
  const context = `killed at point #${index} (${points[index - 1]})\n${describeChild(child)}`;
  expect(child.signal, context).toBe("SIGKILL");
  const accepted = child.lines.flatMap((line) => (line.type === "accepted" ? [line] : []));

  const { environment, logger } = await reopen(where);
  const diagnosis = `${context}\nwarnings:\n${logger.warnings.join("\n")}`;
  const rows = await within(
    (async () => {
      for (;;) {
        const all = await environment.executions({ agentId: QUEUE_AGENT_ID, limit: 1_000 });
        if (all.every((row) => row.status === "terminal")) return all;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })(),
    30_000,
    `the queue to drain\n${diagnosis}`,
  );

  // Each message at most once; each one the child was told of is there.
  const inputs = rows.map((row) => row.input as string);
  expect(new Set(inputs).size, diagnosis).toBe(inputs.length);
  for (const line of accepted) expect(rows.find((row) => row.executionId === line.executionId)?.input, diagnosis).toBe(line.input);
  for (const row of rows) expect(row, diagnosis).toMatchObject({ outcome: "completed", output: ANSWER });
  // In the order sent: the conversation's memory holds the user
  // messages in that order.
  const journal = await environment.store.readJournal(QUEUE_AGENT_ID, 100);
  const sent = journal.filter((record) => record.role === "user").map((record) => record.content);
  const expected = Array.from({ length: MESSAGES }, (_, message) => messageInput(message)).filter((input) => inputs.includes(input));
  expect(sent, diagnosis).toEqual(expected);
  // Each tool effect once, with the key its barrier wrote.
  const audit = auditKeys(
    where.files,
    await barrierKeys(
      environment,
      rows.map((row) => row.executionId),
    ),
  );
  expect(audit.problems, diagnosis).toEqual([]);
  const effects = effectsByExecution(where.files);
  for (const row of rows)
    expect(
      effects
        .get(row.executionId)
        ?.map((effect) => effect.orderId)
        .sort(),
      diagnosis,
    ).toEqual(["42", "43"]);
  await environment.close();
}

async function traced(): Promise<string[]> {
  if (tracedPoints) return tracedPoints;
  const where = await crashPaths();
  const child = await runQueueChild({ store: where.store, files: where.files, messages: MESSAGES, trace: true });
  expect(child.code, describeChild(child)).toBe(0);
  const settled = child.lines.flatMap((line) => (line.type === "settled" ? [line.output] : []));
  expect(settled).toEqual(Array.from({ length: MESSAGES }, () => ANSWER));
  tracedPoints = child.lines.flatMap((line) => (line.type === "point" ? [line.point] : []));
  return tracedPoints;
}

describe("queue crash matrix: kill -9 at every point with messages queued behind the running one", () => {
  it("one uninterrupted run queues two messages and runs all three", async () => {
    const points = await traced();
    expect(points.filter((point) => point.startsWith("after:enqueueMessage"))).toHaveLength(MESSAGES - 1);
    expect(points.filter((point) => point.startsWith("after:prepareExecution"))).toHaveLength(MESSAGES);
    expect(points.filter((point) => point.startsWith("tool:"))).toHaveLength(2 * MESSAGES);
  }, 60_000);

  it("killed at each point: every accepted message runs exactly once, in order, each effect once", async () => {
    const points = await traced();
    // Two kills at a time: each is its own child, store and environment.
    const indices = Array.from({ length: points.length }, (_, index) => index + 1);
    for (let next = 0; next < indices.length; next += KILLS_AT_ONCE) {
      await Promise.all(indices.slice(next, next + KILLS_AT_ONCE).map((index) => killAndRecover(index, points)));
    }
  }, 600_000);
});
