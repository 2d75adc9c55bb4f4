// Durable timers on one PostgreSQL schema shared by several environments
// (docs/decisions/0076): a timer committed by one process and fired on
// time by another that opened after it closed; fired now from a process
// that does not hold the conversation (through the approval inbox); and
// with two processes open, fired once — by the holder of its partition.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, timer, type Environment, type Json } from "../../host/index.js";
import { recordingLogger, scriptedModel, waitFor } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";

/** Slack for a timer firing late on a loaded machine. */
const lateMsMax = 3_000;

const pause = timer({ inputSchema: z.object({ ms: z.number().int().min(0) }), until: ({ ms }) => ms });

function callingModel(toolName: string, input: Json) {
  return scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    if (last?.role !== "tool") return { toolCalls: [{ toolName, input }] };
    return { text: JSON.stringify(last.results[0]?.output) };
  });
}

function sleeper(env: Environment, ms: number) {
  return env.agent({ id: "sleeper", model: callingModel("pause", { ms }), tools: { pause } });
}

async function open(url: string): Promise<Environment> {
  const env = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => env.close());
  return env;
}

async function pendingOf(env: Environment, executionId: string) {
  return waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
}

async function endedOf(env: Environment, executionId: string) {
  return waitFor(async () => {
    const row = await env.execution(executionId);
    return row?.status === "terminal" ? row : undefined;
  });
}

describe("timers across processes (PostgreSQL)", () => {
  it("fires on time a timer committed by a process that closed, from the process that opened after it", async () => {
    const url = `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`;
    const first = await open(url);
    const executionId = await sleeper(first, 1_200).start("go").executionId;
    const pending = await pendingOf(first, executionId);
    expect(pending).toMatchObject({ kind: "timer" });
    await first.close();
    const second = await open(url);
    const agent = sleeper(second, 1_200);
    await second.recovery(agent.id);
    const ended = await endedOf(second, executionId);
    expect(ended.outcome).toBe("completed");
    const { firedAt } = JSON.parse(String(ended.output)) as { firedAt: number };
    expect(firedAt).toBeGreaterThanOrEqual(pending.dueAt ?? Infinity);
    expect(firedAt - (pending.dueAt ?? 0)).toBeLessThan(lateMsMax);
  });

  it("fires now from a process that does not hold the conversation: filed, applied by the owner once; a second fire is refused", async () => {
    const url = `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`;
    const owner = await open(url);
    const ownerAgent = sleeper(owner, 600_000);
    await owner.recovery(ownerAgent.id);
    const standby = await open(url);
    const standbyAgent = sleeper(standby, 600_000);
    await standby.recovery(standbyAgent.id);
    const original = ownerAgent.start("go");
    const executionId = await original.executionId;
    const waitId = (await pendingOf(standby, executionId)).request.approvalId;
    const fired = await standbyAgent.resume(executionId, { waitId, fire: true }).result;
    expect(fired.outcome).toBe("completed");
    await expect(original.result).resolves.toMatchObject({ outcome: "completed", output: fired.output });
    await expect(standbyAgent.resume(executionId, { waitId, fire: true }).result).rejects.toMatchObject({ code: "APPROVAL_MISMATCH" });
    expect((await owner.timeline(executionId)).filter((step) => step.kind === "approval_decided")).toHaveLength(1);
  });

  it("with two processes open, the due sweep fires a timer once, on time", async () => {
    const url = `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`;
    const owner = await open(url);
    const ownerAgent = sleeper(owner, 800);
    await owner.recovery(ownerAgent.id);
    const standby = await open(url);
    await standby.recovery(sleeper(standby, 800).id);
    const run = ownerAgent.start("go");
    const pending = await pendingOf(standby, await run.executionId);
    const result = await run.result;
    const { firedAt } = JSON.parse(String(result.output)) as { firedAt: number };
    expect(firedAt - (pending.dueAt ?? 0)).toBeLessThan(lateMsMax);
    expect(firedAt).toBeGreaterThanOrEqual(pending.dueAt ?? Infinity);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await standby.timeline(pending.executionId)).filter((step) => step.kind === "approval_decided")).toHaveLength(1);
  });
});
