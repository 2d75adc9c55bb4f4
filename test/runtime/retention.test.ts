// Retention through the public API (runtime/retention.ts,
// docs/decisions/0027), on real SQLite files: options refused with clear
// errors; `env.prune()` removes finished executions and says what it
// removed; a pruned conversation's next start still sees its memory
// window; per-agent retention; and the background pruner running while
// executions run loses and corrupts nothing (randomized, seed printed).

import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { InvalidInputError, Phronomy, type Environment } from "../../host/index.js";
import { MEMORY_WINDOW_MAX } from "../../host/runtime/options.js";
import { RETENTION_FINISHED_MS_MIN } from "../../host/runtime/retention.js";
import { journalRecordsKept } from "../../host/store/prune.js";
import { generator, seedFrom } from "../support/seeded.js";
import {
  agentRunModel,
  approvalRefundTool,
  lookupTool,
  openEnvironment,
  recordingLogger,
  scriptedModel,
  temporaryStorePath,
  turnOf,
  waitFor,
} from "./helpers.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Rows of every table that names an execution no longer in the store. */
function danglingRows(path: string): Record<string, number> {
  const database = new Database(path, { readonly: true });
  try {
    const count = (sql: string) => Number((database.prepare(sql).get() as { n: number }).n);
    return {
      // The timeline is keyed by the execution's rowid (docs/decisions/0094).
      steps: count("SELECT count(*) AS n FROM steps WHERE execution_rowid NOT IN (SELECT rowid FROM executions)"),
      approval_inbox: count("SELECT count(*) AS n FROM approval_inbox WHERE execution_id NOT IN (SELECT execution_id FROM executions)"),
    };
  } finally {
    database.close();
  }
}

/** A model that answers `answer <input>` and records the prompts it saw
 * (the user and assistant texts). */
function echoModel(prompts: string[][]) {
  return scriptedModel(({ messages }) => {
    const texts: string[] = [];
    for (const message of messages) {
      if (message.role === "user") texts.push(message.content);
      else if (message.role === "assistant") texts.push(message.text);
    }
    prompts.push(texts);
    return { text: `answer ${texts.at(-1) ?? ""}` };
  });
}

describe("retention options", () => {
  it("refuses bad retention options at open, at definition and at prune, naming what was wrong", async () => {
    const store = await temporaryStorePath();
    await expect(Phronomy.open({ store, retention: { finishedMs: 7 } })).rejects.toThrow(
      /retention.finishedMs" must be "forever" or an integer number of milliseconds from 1000.*7 days is 604800000/,
    );
    await expect(Phronomy.open({ store, retention: { finishedMs: -1 } })).rejects.toThrow(InvalidInputError);
    await expect(Phronomy.open({ store, retention: { finishedMs: 1.5e3 + 0.5 } })).rejects.toThrow(/integer/);
    await expect(Phronomy.open({ store, retention: { finishedMs: "never" as "forever" } })).rejects.toThrow(/"never"/);
    await expect(Phronomy.open({ store, retention: { days: 3 } as never })).rejects.toThrow(
      /unknown option "days"; allowed: finishedMs, intervalMs, journalRecordsKept/,
    );
    await expect(Phronomy.open({ store, retention: { journalRecordsKept: 1_001 } })).rejects.toThrow(
      /"retention.journalRecordsKept" must be an integer from 1 to 1000/,
    );
    await expect(Phronomy.open({ store, retention: { intervalMs: 0 } })).rejects.toThrow(/intervalMs" must be an integer from 10/);
    await expect(Phronomy.open({ store, retention: 7 as never })).rejects.toThrow(/"retention" must be an object/);
    const env = await openEnvironment();
    const model = agentRunModel();
    expect(() => env.agent({ id: "a", model, retention: {} as never })).toThrow(/retention.finishedMs" is required/);
    expect(() => env.agent({ id: "a", model, retention: { finishedMs: 10 } })).toThrow(/agent "a": "retention.finishedMs"/);
    expect(() => env.agent({ id: "a", model, retention: { finishedMs: 1_000, intervalMs: 5 } as never })).toThrow(
      /unknown option "intervalMs"; allowed: finishedMs/,
    );
    const small = await openEnvironment({ retention: { journalRecordsKept: 10 } });
    expect(() => small.agent({ id: "wide", model })).toThrow(/agent "wide": its memoryWindow \(20\) is more than the 10 journal records the environment keeps/);
    expect(small.agent({ id: "narrow", model, memoryWindow: 10 }).id).toBe("narrow");
    await expect(env.prune({ olderThanMs: -1 })).rejects.toThrow(/"olderThanMs" must be an integer/);
    await expect(env.prune({ agentId: "" })).rejects.toThrow(/agentId/);
    await expect(env.prune({ everything: true } as never)).rejects.toThrow(/unknown option "everything"/);
    expect(RETENTION_FINISHED_MS_MIN).toBe(1_000);
  });

  it("keeps at least the largest memory window a definition may ask for", () => {
    expect(journalRecordsKept).toBeGreaterThanOrEqual(MEMORY_WINDOW_MAX);
  });
});

describe("env.prune()", () => {
  it("removes the finished executions older than asked, with their timelines, and never a suspended or running one", async () => {
    const path = await temporaryStorePath();
    const env = await Phronomy.open({ store: path, logger: recordingLogger(), retention: { finishedMs: "forever" } });
    try {
      const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
      const finished: string[] = [];
      for (const index of [1, 2, 3]) finished.push((await agent.start(`question ${index}`).result).executionId);
      const refunds: string[] = [];
      const approver = env.agent({
        id: "refunds",
        model: scriptedModel([{ toolCalls: [{ toolName: "refund", input: { orderId: "1", amount: 5 } }] }, { text: "done" }]),
        tools: { refund: approvalRefundTool(refunds) },
      });
      const waiting = await approver.start("refund").executionId;
      await waitFor(async () => (await env.pendingApprovals()).find((pending) => pending.executionId === waiting));
      await sleep(5);
      const stepsBefore = (await Promise.all(finished.map((id) => env.timeline(id)))).reduce((sum, steps) => sum + steps.length, 0);
      // Nothing is that old yet.
      expect(await env.prune({ olderThanMs: 60_000 })).toEqual({ executions: 0, steps: 0, journal: 0, approvals: 0 });
      const report = await env.prune({ olderThanMs: 0 });
      expect(report).toEqual({ executions: 3, steps: stepsBefore, journal: 0, approvals: 0 });
      for (const id of finished) {
        expect(await env.execution(id)).toBeUndefined();
        expect(await env.timeline(id)).toEqual([]);
      }
      expect(await env.execution(waiting)).toMatchObject({ status: "suspended" });
      expect(danglingRows(path)).toEqual({ steps: 0, approval_inbox: 0 });
      // The suspended execution is still decided and finishes normally.
      const pending = (await env.pendingApprovals())[0]!;
      await expect(approver.resume(waiting, { approvalId: pending.request.approvalId, approved: true }).result).resolves.toMatchObject({
        outcome: "completed",
      });
      expect(refunds).toHaveLength(1);
    } finally {
      await env.close();
    }
  });

  it("prunes one agent only with agentId, and by each agent's own retention without olderThanMs", async () => {
    const env = await openEnvironment({ retention: { finishedMs: "forever" } });
    const keep = env.agent({ id: "keep", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const short = env.agent({ id: "short", model: agentRunModel(), tools: { lookup: lookupTool() }, retention: { finishedMs: 1_000 } });
    const other = env.agent({ id: "other", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await keep.start("k").result;
    await short.start("s").result;
    await other.start("o").result;
    await sleep(5);
    expect(await env.prune({ olderThanMs: 0, agentId: "other" })).toMatchObject({ executions: 1 });
    expect((await env.executions()).map((row) => row.agentId).sort()).toEqual(["keep", "short"]);
    // By policy: "short" after its second; "keep" (the environment's: forever) never.
    expect(await env.prune()).toMatchObject({ executions: 0 });
    await sleep(1_050);
    expect(await env.prune()).toMatchObject({ executions: 1 });
    expect((await env.executions()).map((row) => row.agentId)).toEqual(["keep"]);
  });

  it("is refused in a visitor, which never writes", async () => {
    const path = await temporaryStorePath();
    const owner = await Phronomy.open({ store: path, logger: recordingLogger() });
    try {
      const visitor = await Phronomy.open({ store: path, visitor: true, logger: recordingLogger() });
      try {
        await expect(visitor.prune()).rejects.toThrow(/env.prune\(\) was refused: this environment visits the store/);
      } finally {
        await visitor.close();
      }
    } finally {
      await owner.close();
    }
  });
});

describe("a pruned conversation", () => {
  it("starts again with the same memory window: the journal outlives its executions", async () => {
    const prompts: string[][] = [];
    const env = await openEnvironment({ retention: { finishedMs: "forever" } });
    const chat = env.agent({ id: "chat", model: echoModel(prompts), memoryWindow: 4 });
    for (const question of ["q1", "q2", "q3"]) await chat.start(question).result;
    const control = await openEnvironment({ retention: { finishedMs: "forever" } });
    const controlPrompts: string[][] = [];
    const controlChat = control.agent({ id: "chat", model: echoModel(controlPrompts), memoryWindow: 4 });
    for (const question of ["q1", "q2", "q3"]) await controlChat.start(question).result;
    await sleep(5);
    expect(await env.prune({ olderThanMs: 0 })).toMatchObject({ executions: 3, journal: 0 });
    expect(await env.executions()).toEqual([]);
    await chat.start("q4").result;
    await controlChat.start("q4").result;
    // The same prompt as the conversation that was never pruned: q2 a2 q3 a3, then q4.
    expect(prompts.at(-1)).toEqual(controlPrompts.at(-1));
    expect(prompts.at(-1)).toHaveLength(5);
    expect(prompts.at(-1)).toEqual(["q2", "answer q2", "q3", "answer q3", "q4"]);
  });
});

describe("background pruning", () => {
  it("runs while executions run and loses nothing: every run finishes right, suspended ones stay, old ones go with all their rows", async () => {
    const seed = seedFrom("PHRONOMY_RETENTION_SEED");
    console.log(`background pruning: seed ${seed} (replay with PHRONOMY_RETENTION_SEED=${seed})`);
    const random = generator(seed);
    const path = await temporaryStorePath();
    const env: Environment = await Phronomy.open({ store: path, logger: recordingLogger(), retention: { finishedMs: 1_000, intervalMs: 20 } });
    try {
      const refunds: string[] = [];
      const agents = Array.from({ length: 6 }, (_, index) =>
        env.agent({
          id: `conversation-${index}`,
          model: scriptedModel(
            ({ messages }) => {
              const lastUser = messages.findLast((message) => message.role === "user");
              const input = JSON.stringify(lastUser?.role === "user" ? lastUser.content : "");
              const turn = turnOf(messages);
              if (input.includes("refund") && turn === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "7", amount: 5 } }] };
              if (input.includes("lookup") && turn < 2) return { toolCalls: [{ toolName: "lookup", input: { orderId: `${turn}` } }] };
              return { text: `done: ${input}` };
            },
            { latencyMs: 1 + Math.floor(random() * 3) },
          ),
          tools: { lookup: lookupTool(), refund: approvalRefundTool(refunds) },
          memoryWindow: 6,
        }),
      );
      const suspended = new Set<string>();
      /** Conversations holding a suspended execution: busy until decided. */
      const held = new Set<string>();
      const lastCompleted = new Map<string, string>();
      let started = 0;
      // Waves for ≈2.5 s: the first executions pass their retention while later ones run.
      const until = Date.now() + 2_500;
      // And on until at least 21 started, however slow the machine (unless
      // every conversation is held: none could start).
      while (Date.now() < until || (started <= 20 && held.size < agents.length)) {
        const wave = agents.filter((agent) => !held.has(agent.id) && random() < 0.7);
        await Promise.all(
          wave.map(async (agent) => {
            const kind = random() < 0.1 ? "refund" : random() < 0.6 ? "lookup" : "chat";
            const input = `${kind} ${started}`;
            started += 1;
            let approvalRequired!: () => void;
            const asked = new Promise<"suspended">((resolve) => {
              approvalRequired = () => resolve("suspended");
            });
            const run = agent.start(input, { onEvent: (event) => event.type === "approval_required" && approvalRequired() });
            const ended = await Promise.race([run.result, asked]);
            if (ended === "suspended") {
              // Waiting for approval: it must stay in the store, whatever its age.
              suspended.add(await run.executionId);
              held.add(agent.id);
              run.result.catch(() => undefined); // settled by the close, never decided
              return;
            }
            expect(ended).toMatchObject({ outcome: "completed", output: `done: ${JSON.stringify(input)}` });
            lastCompleted.set(agent.id, input);
          }),
        );
        await sleep(Math.floor(random() * 30));
      }
      expect(started).toBeGreaterThan(20);
      // The pruner ran while they ran: the first ones are gone already.
      expect((await env.executions({ limit: 1_000 })).length).toBeLessThan(started);
      // Past the retention, the pruner leaves only the suspended executions.
      const remaining = await waitFor(async () => {
        const rows = await env.executions({ limit: 1_000 });
        return rows.every((row) => row.status !== "terminal") ? rows : undefined;
      }, 10_000);
      expect(new Set(remaining.map((row) => row.executionId))).toEqual(suspended);
      for (const row of remaining) expect(row.status).toBe("suspended");
      expect(danglingRows(path)).toEqual({ steps: 0, approval_inbox: 0 });
      // Every conversation keeps its memory: its newest journal record is
      // the answer of its last completed execution (or a later input).
      for (const agent of agents) {
        const last = lastCompleted.get(agent.id);
        if (last === undefined) continue;
        const journal = JSON.stringify(await env.store.readJournal(agent.id, 6));
        expect(journal).toContain(JSON.stringify(`done: ${JSON.stringify(last)}`).slice(1, -1));
      }
      expect(refunds).toEqual([]);
    } finally {
      await env.close();
    }
  }, 30_000);
});
