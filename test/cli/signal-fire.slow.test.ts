// `phronomy signal <key>` and `phronomy fire <execution>` (decision 0088):
// the waits the outside world and the clock answer, answered from the
// command line through the calls an application makes (`env.signal`,
// `agent.resume(id, { waitId, fire: true })`). `show` names the key and
// the due time with the command that answers each; bad input is a usage
// error; an event no wait takes yet is kept, or refused with --if-waiting.

import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { loadAgentModule } from "../../host/cli/agent-module.js";
import { recordingLogger } from "../runtime/helpers.js";
import { cli, describeResult, errorLines, fixture, jsonOf, temporaryStore } from "./helpers.js";

const waitsModule = fixture("waits-agent.ts");

async function suspendedRun(store: string, input: string): Promise<{ executionId: string; approval: { approvalId: string; kind: string }; stderr: string }> {
  const run = await cli(["run", waitsModule, input, "--store", store, "--json"]);
  expect(run.code, describeResult(run)).toBe(3);
  return { ...jsonOf(run), stderr: run.stderr };
}

describe("phronomy signal and fire", () => {
  it("signal: show names the key; a bad payload is a usage error; the event resumes the wait and the execution completes", async () => {
    const store = await temporaryStore();
    const pending = await suspendedRun(store, "pay for order 42");
    expect(pending.approval.kind).toBe("event");
    expect(pending.stderr).toContain(`phronomy signal payment:42`);
    const shown = await cli(["show", pending.executionId, "--store", store]);
    expect(shown.code, describeResult(shown)).toBe(0);
    expect(shown.stdout).toContain('pending event · key "payment:42"');
    expect(shown.stdout).toContain("phronomy signal payment:42");
    expect((await cli(["ls", "--store", store])).stdout).toContain("waiting for an event");

    const notJson = await cli(["signal", "payment:42", "--payload", "{amount:", "--store", store]);
    expect(notJson.code).toBe(2);
    expect(errorLines(notJson)[0]).toContain("--payload must be JSON");
    const badKeep = await cli(["signal", "payment:42", "--keep-for", "soon", "--store", store]);
    expect(badKeep.code).toBe(2);
    expect(errorLines(badKeep)[0]).toContain("--keep-for must be a duration");
    const noModule = await cli(["signal", "payment:42", "--payload", '{"amount":30}', "--store", store]);
    expect(noModule.code, describeResult(noModule)).toBe(2);
    expect(errorLines(noModule)[0]).toContain("--agent-module");
    const refused = await cli(["signal", "payment:42", "--payload", '{"amount":"thirty"}', "--agent-module", waitsModule, "--store", store]);
    expect(refused.code, describeResult(refused)).toBe(1);
    expect(errorLines(refused)[0]).toMatch(/\[(INVALID_INPUT|SIGNAL_REFUSED)\]/);
    expect(jsonOf(await cli(["show", pending.executionId, "--store", store, "--json"])).execution).toMatchObject({ status: "suspended" });

    const sent = await cli(["signal", "payment:42", "--payload", '{"amount":30}', "--agent-module", waitsModule, "--store", store, "--json"]);
    expect(sent.code, describeResult(sent)).toBe(0);
    expect(jsonOf(sent)).toMatchObject({ executionId: pending.executionId, outcome: "completed", output: 'Done: {"amount":30}' });

    // No wait on the key now: --if-waiting refuses the event; without it the event is kept for the next wait on the key.
    const notWaiting = await cli(["signal", "payment:42", "--if-waiting", "--store", store]);
    expect(notWaiting.code, describeResult(notWaiting)).toBe(1);
    expect(errorLines(notWaiting)[0]).toContain("[SIGNAL_REFUSED]");
    const kept = await cli(["signal", "payment:42", "--payload", '{"amount":12}', "--keep-for", "2h", "--store", store, "--json"]);
    expect(kept.code, describeResult(kept)).toBe(0);
    expect(jsonOf(kept)).toMatchObject({ status: "stored", key: "payment:42" });
    expect(kept.stderr).toBe("");
  });

  it("run beside a wait that is not an approval: AGENT_BUSY says what it waits for and the command that answers it", async () => {
    const store = await temporaryStore();
    const event = await suspendedRun(store, "pay for order 42");
    const busy = await cli(["run", waitsModule, "pay again", "--store", store, "--json"]);
    expect(busy.code, describeResult(busy)).toBe(1);
    expect(jsonOf(busy).error).toMatchObject({ code: "AGENT_BUSY", executionId: event.executionId, details: { waitKind: "event" } });
    const said = await cli(["run", waitsModule, "pay again", "--store", store]);
    expect(errorLines(said)).toEqual([expect.stringContaining(`[AGENT_BUSY] agent "checkout" has execution ${event.executionId} waiting for an event`)]);
    expect(errorLines(said)[0]).toContain("answer it first: phronomy signal payment:42");
    expect(errorLines(said)[0]).not.toContain("approv");

    const timerStore = await temporaryStore();
    const timer = await suspendedRun(timerStore, "remind me");
    const timerBusy = await cli(["run", waitsModule, "remind me again", "--store", timerStore]);
    expect(timerBusy.code, describeResult(timerBusy)).toBe(1);
    expect(errorLines(timerBusy)[0]).toContain(`has execution ${timer.executionId} waiting for a timer`);
    expect(errorLines(timerBusy)[0]).toContain(`phronomy fire ${timer.executionId}`);
  });

  it("fire: show gives the timer's due time; --wait of another wait is refused; fire runs the timer now", async () => {
    const store = await temporaryStore();
    const pending = await suspendedRun(store, "remind me tomorrow");
    expect(pending.approval.kind).toBe("timer");
    expect(pending.stderr).toContain(`phronomy fire ${pending.executionId}`);
    const shown = await cli(["show", pending.executionId, "--store", store]);
    expect(shown.stdout).toContain("pending timer");
    expect(shown.stdout).toContain(`fire it now with phronomy fire ${pending.executionId}`);
    expect((await cli(["ls", "--store", store])).stdout).toContain("waiting for a timer");

    const otherWait = await cli(["fire", pending.executionId, "--wait", "no-such-wait", "--agent-module", waitsModule, "--store", store]);
    expect(otherWait.code, describeResult(otherWait)).toBe(1);
    expect(errorLines(otherWait)[0]).toContain("[APPROVAL_MISMATCH]");
    const fired = await cli(["fire", pending.executionId.slice(0, 8), "--by", "ops", "--agent-module", waitsModule, "--store", store, "--json"]);
    expect(fired.code, describeResult(fired)).toBe(0);
    expect(jsonOf(fired)).toMatchObject({ executionId: pending.executionId, outcome: "completed" });
    expect(jsonOf(fired).output).toContain("firedAt");
    const again = await cli(["fire", pending.executionId, "--agent-module", waitsModule, "--store", store]);
    expect(again.code).toBe(1);
    expect(errorLines(again)[0]).toContain("[NOT_WAITING_FOR_APPROVAL]");
  });

  it("beside a live owner, signal files the event for it and follows the execution to its end", async () => {
    const store = await temporaryStore();
    const owner = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      const { definition } = await loadAgentModule(waitsModule, { model: undefined, storePath: store });
      const run = owner.agent(definition).start("pay for order 42");
      const executionId = await run.executionId;
      for (;;) {
        if ((await owner.pendingApprovals()).some((pending) => pending.key === "payment:42")) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const sent = await cli(["signal", "payment:42", "--payload", '{"amount":5}', "--store", store, "--json"]);
      expect(sent.code, describeResult(sent)).toBe(0);
      expect(sent.stderr).toContain("the event is filed for it to apply");
      expect(jsonOf(sent)).toMatchObject({ executionId, outcome: "completed", output: 'Done: {"amount":5}' });
      expect((await run.result).output).toBe('Done: {"amount":5}');
    } finally {
      await owner.close();
    }
  });
});
