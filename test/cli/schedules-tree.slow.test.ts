// `phronomy schedules` (list, show, cancel, run) and the child tree `show`
// draws (decision 0088), on stores an application made through the
// library: the CLI reads and acts through `env.schedules`, `env.schedule`,
// `env.cancelSchedule`, `env.runSchedule` and `env.executionTree`. Beside a
// live owner the CLI visits: it lists schedules, cancels one, and claims a
// run now that the owner starts (decision 0097).

import { describe, expect, it } from "vitest";
import { agentTool, Phronomy, type Environment } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { recordingLogger } from "../runtime/helpers.js";
import { cli, describeResult, errorLines, jsonOf, temporaryStore } from "./helpers.js";

const answering = scriptedModel(() => ({ text: "ok" }));

async function withOwner<T>(store: string, body: (environment: Environment) => Promise<T>): Promise<T> {
  const environment = await Phronomy.open({ store, logger: recordingLogger() });
  try {
    return await body(environment);
  } finally {
    await environment.close();
  }
}

describe("phronomy schedules", () => {
  it("lists, shows, runs and cancels schedules; a bad id or state is a typed error", async () => {
    const store = await temporaryStore();
    const { daily, once } = await withOwner(store, async (environment) => {
      const support = environment.agent({ name: "support", model: answering });
      return {
        daily: await support.conversation("user-1").schedule("Daily digest", { cron: "0 9 * * *" }),
        once: await support.conversation("user-2").schedule("Check back on order 42", { at: new Date(Date.now() + 3_600_000) }),
      };
    });
    const listed = await cli(["schedules", "--store", store]);
    expect(listed.code, describeResult(listed)).toBe(0);
    expect(listed.stdout).toContain(daily.scheduleId);
    expect(listed.stdout).toContain('cron "0 9 * * *" UTC');
    expect(listed.stdout).toContain("user-2 (support)");
    expect(listed.stdout).toContain("2 schedules");
    const json = jsonOf(await cli(["schedules", "list", "--agent", "user-1", "--store", store, "--json"]));
    expect(json.schedules).toEqual([expect.objectContaining({ scheduleId: daily.scheduleId, state: "active", lastFiring: null })]);
    expect(json.schedules[0].nextRunAt).toMatch(/T09:00:00\.000Z$/);

    const shown = await cli(["schedules", "show", once.scheduleId, "--store", store]);
    expect(shown.code, describeResult(shown)).toBe(0);
    expect(shown.stdout).toContain('"Check back on order 42"');
    expect(shown.stdout).toContain(`phronomy schedules run ${once.scheduleId}`);
    const missing = await cli(["schedules", "show", "no-such-schedule", "--store", store]);
    expect(missing.code).toBe(1);
    expect(errorLines(missing)[0]).toContain("[SCHEDULE_NOT_FOUND]");
    const badState = await cli(["schedules", "--state", "sleeping", "--store", store]);
    expect(badState.code).toBe(2);
    expect(errorLines(badState)[0]).toContain("sleeping");

    // The CLI does not define "support": the firing is claimed and starts in the next owner, at once.
    const ran = await cli(["schedules", "run", once.scheduleId, "--store", store]);
    expect(ran.code, describeResult(ran)).toBe(0);
    expect(ran.stdout).toContain(`claimed schedule ${once.scheduleId} to fire now`);
    const fired = await withOwner(store, async (environment) => {
      environment.agent({ name: "support", model: answering });
      for (;;) {
        const schedule = await environment.schedule(once.scheduleId);
        if (schedule?.lastFiring !== undefined) return schedule;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    });
    expect(fired).toMatchObject({ state: "done", firings: 1, lastFiring: { outcome: "started" } });
    expect((await cli(["schedules", "show", once.scheduleId, "--store", store])).stdout).toMatch(/last firing\s+started at .* · execution /);

    const cancelled = await cli(["schedules", "cancel", daily.scheduleId, "--store", store]);
    expect(cancelled.code, describeResult(cancelled)).toBe(0);
    expect(cancelled.stdout).toContain(`cancelled schedule ${daily.scheduleId}`);
    const runCancelled = await cli(["schedules", "run", daily.scheduleId, "--store", store]);
    expect(runCancelled.code).toBe(1);
    expect(errorLines(runCancelled)[0]).toContain("[INVALID_INPUT]");
  });

  it("beside a live owner runs a schedule now and cancels one: the owner starts the firing once, and the command prints its execution", async () => {
    const store = await temporaryStore();
    const environment = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      const support = environment.agent({ name: "support", model: answering });
      const daily = await support.conversation("user-1").schedule("Daily digest", { cron: "0 9 * * *" });
      const once = await support.conversation("user-2").schedule("Check back on order 42", { at: new Date(Date.now() + 3_600_000) });
      const listed = await cli(["schedules", "--store", store]);
      expect(listed.code, describeResult(listed)).toBe(0);
      expect(listed.stdout).toContain(daily.scheduleId);

      const ran = await cli(["schedules", "run", daily.scheduleId, "--store", store, "--json"]);
      expect(ran.code, describeResult(ran)).toBe(0);
      const fired = jsonOf(ran).schedule;
      expect(fired).toMatchObject({ state: "active", firings: 1, firingSlotAt: null, lastFiring: { outcome: "started", executionId: expect.any(String) } });
      const executions = await environment.executions({ agentId: "user-1" });
      expect(executions.map((row) => row.executionId)).toEqual([fired.lastFiring.executionId]);
      expect(fired.nextRunAt).toMatch(/T09:00:00\.000Z$/);

      // Two commands at once on a one-shot schedule: one firing, one execution; the other is told why not.
      const both = await Promise.all([1, 2].map(() => cli(["schedules", "run", once.scheduleId, "--store", store])));
      const firedOnce = both.filter((result) => result.code === 0);
      expect(firedOnce, both.map(describeResult).join("\n")).toHaveLength(1);
      expect(firedOnce[0]?.stdout).toContain(`fired schedule ${once.scheduleId}`);
      for (const refused of both.filter((result) => result.code !== 0)) expect(errorLines(refused)[0]).toContain("[INVALID_INPUT]");
      expect(await environment.executions({ agentId: "user-2" })).toHaveLength(1);
      expect(await environment.schedule(once.scheduleId)).toMatchObject({ state: "done", firings: 1 });

      const cancel = await cli(["schedules", "cancel", daily.scheduleId, "--store", store]);
      expect(cancel.code, describeResult(cancel)).toBe(0);
      expect(cancel.stdout).toContain(`cancelled schedule ${daily.scheduleId}`);
      expect(await environment.schedule(daily.scheduleId)).toMatchObject({ state: "cancelled", nextRunAt: undefined });
      const again = await cli(["schedules", "cancel", daily.scheduleId, "--store", store]);
      expect(again.stdout).toContain("was cancelled already");
    } finally {
      await environment.close();
    }
  });
});

describe("phronomy show draws the child tree", () => {
  it("a parent lists its children with their state; a child names its parent", async () => {
    const store = await temporaryStore();
    const { parentId, childId } = await withOwner(store, async (environment) => {
      const researcher = environment.agent({ name: "researcher", model: scriptedModel(() => ({ text: "found kettles" })) });
      const research = agentTool(researcher, { description: "Researches a topic" });
      const parentModel = scriptedModel(({ messages }) =>
        messages.at(-1)?.role === "tool" ? { text: "done" } : { toolCalls: [{ toolName: "research", input: { input: "kettles" } }] },
      );
      const support = environment.agent({ name: "support", model: parentModel, tools: { research } });
      const run = support.conversation("ana").start("find me a kettle");
      await run.result;
      const parentId = await run.executionId;
      const tree = await environment.executionTree(parentId);
      return { parentId, childId: tree!.children[0]!.execution.executionId };
    });
    const parent = await cli(["show", parentId, "--store", store]);
    expect(parent.code, describeResult(parent)).toBe(0);
    expect(parent.stdout).toMatch(/children\s+1 \(agentTool calls\)/);
    expect(parent.stdout).toContain(`└─ ${childId} · agent "${parentId}:`);
    expect(parent.stdout).toMatch(/└─ .* · completed/);
    const child = await cli(["show", childId, "--store", store, "--json"]);
    expect(jsonOf(child).tree).toMatchObject({ parent: { executionId: parentId, agentId: "ana" }, children: [] });
    expect((await cli(["show", childId, "--store", store])).stdout).toMatch(new RegExp(`parent\\s+${parentId} · agent "ana" · call `));
  });
});
