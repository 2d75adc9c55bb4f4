// Bad input through the public API is refused with a typed INVALID_INPUT
// naming what was wrong, never ignored (issue 11, bug 9): open limits, the
// executions filter's vocabulary (statuses and outcomes), the purge of an
// agent with unfinished executions (AGENT_BUSY whether or not the agent is
// defined), and `?lease_ms=` showing the value given.

import { describe, expect, it } from "vitest";
import { InvalidInputError, Phronomy, PhronomyError } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { agentRunModel, approvalRefundTool, lookupTool, openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, waitFor } from "./helpers.js";

async function refusal(promise: Promise<unknown>): Promise<PhronomyError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(PhronomyError);
  return error as PhronomyError;
}

describe("Phronomy.open limits", () => {
  it("refuses an unknown limits key by name", async () => {
    const error = await refusal(Phronomy.open({ store: await temporaryStorePath(), limits: { executionMax: 5 } as never }));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toMatch(/unknown option "executionMax"; allowed: agentsMax, executionsMax/);
  });

  for (const [key, value] of [
    ["executionsMax", -1],
    ["agentsMax", 0],
    ["executionsMax", 1.5],
    ["agentsMax", "10"],
    ["executionsMax", 1e12],
  ] as const) {
    it(`refuses limits.${key} = ${JSON.stringify(value)} with INVALID_INPUT`, async () => {
      const error = await refusal(Phronomy.open({ store: await temporaryStorePath(), limits: { [key]: value } as never }));
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error.code).toBe("INVALID_INPUT");
      expect(error.message).toContain(`"${key}" must be an integer from 1 to`);
    });
  }

  it("refuses limits that are not an object, a recover that is not a boolean, a logger without warn", async () => {
    expect((await refusal(Phronomy.open({ store: await temporaryStorePath(), limits: 5 as never }))).message).toMatch(/"limits" must be an object/);
    expect((await refusal(Phronomy.open({ store: await temporaryStorePath(), recover: "no" as never }))).message).toMatch(/"recover" must be true or false/);
    expect((await refusal(Phronomy.open({ store: await temporaryStorePath(), logger: {} as never }))).message).toMatch(
      /"logger" must be an object with a warn\(message\) method/,
    );
  });

  it("opens with valid limits", async () => {
    const env = await openEnvironment({ limits: { agentsMax: 4, executionsMax: 8 } });
    expect(env.core.limits).toEqual({ agentsMax: 4, executionsMax: 8 });
  });
});

describe("env.executions(filter)", () => {
  it("refuses unknown keys, unknown statuses and outcomes, naming the allowed ones", async () => {
    const env = await openEnvironment();
    const colour = await refusal(env.executions({ colour: "red" } as never));
    expect(colour).toBeInstanceOf(InvalidInputError);
    expect(colour.message).toMatch(/unknown filter key "colour"; known keys: status, outcome, agentId, limit/);
    const bogus = await refusal(env.executions({ status: "bogus" } as never));
    expect(bogus.message).toMatch(/status must be one of preparing, active, suspended, terminal, queued, recovery_required, got "bogus"/);
    const failed = await refusal(env.executions({ status: "failed" } as never));
    expect(failed.message).toMatch(/"failed" is an outcome: filter with \{ outcome: "failed" \}/);
    const outcome = await refusal(env.executions({ outcome: "exploded" } as never));
    expect(outcome.message).toMatch(/outcome must be one of completed, failed, suspended, handed_off, coordination_wait, got "exploded"/);
    expect((await refusal(env.store.listExecutions({ status: "bogus" } as never))).code).toBe("INVALID_INPUT");
  });

  it("filters by outcome: a failed execution is listed under outcome failed", async () => {
    const env = await openEnvironment();
    const failing = env.agent({
      id: "failing",
      model: scriptedModel(() => {
        throw new Error("provider down");
      }),
    });
    const done = env.agent({ id: "done", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const failedRun = failing.start("one");
    await expect(failedRun.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    await done.start("two").result;
    const failedId = await failedRun.executionId;
    expect((await env.executions({ outcome: "failed" })).map((row) => row.executionId)).toEqual([failedId]);
    expect((await env.executions({ status: "terminal", outcome: "completed" })).map((row) => row.agentId)).toEqual(["done"]);
    expect(await env.executions({ agentId: "done", outcome: "failed" })).toEqual([]);
  });
});

describe("env.purgeAgent", () => {
  it("answers AGENT_BUSY for a suspended execution whether or not its agent is defined", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const refund = approvalRefundTool([]);
    const model = scriptedModel(() => ({ toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] }));
    first.agent({ id: "support", model, tools: { refund } }).start("refund 42");
    await waitFor(async () => (await first.pendingApprovals())[0]);
    await first.close();

    const env = await openEnvironment({ store: path, recover: false });
    const undefinedHere = await refusal(env.purgeAgent("support"));
    env.agent({ id: "support", model, tools: { refund } });
    const defined = await refusal(env.purgeAgent("support"));
    for (const error of [undefinedHere, defined]) {
      expect(error.code).toBe("AGENT_BUSY");
      expect(error.message).toMatch(/agent "support" cannot be purged: it has unfinished executions/);
    }
    // The refused purge forgot nothing: the agent recovers and its approval is there.
    expect((await env.recover()).map((item) => item.status)).toEqual(["suspended"]);
    expect(await env.pendingApprovals()).toHaveLength(1);
  });
});

describe("?lease_ms=", () => {
  for (const given of ["abc", "", "12.5", "-3", "1e4"]) {
    it(`names the value given: lease_ms=${JSON.stringify(given)}`, async () => {
      const error = await refusal(PostgresStore.open(`postgres://postgres@127.0.0.1:5432/test?lease_ms=${given}`));
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error.message).toContain(`got ${JSON.stringify(given)}`);
    });
  }
});
