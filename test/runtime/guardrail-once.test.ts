// A start's input guardrail is asked once per start (docs/decisions/0116):
// a message queued behind a running execution is checked when queued (its
// redaction is what the store holds) and started from that verdict, not
// asked again. (A start placed again after a refused preparation, the other
// path that prepared a start twice: test/postgres/placed-again-guardrail.)

import { describe, expect, it } from "vitest";
import type { Guardrail } from "../../host/index.js";
import { agentRunModel, deferred, lookupTool, openEnvironment } from "./helpers.js";

describe("an input guardrail is asked once per start", () => {
  it("a queued message: asked when queued, started from that verdict; the input stored and sent is its redaction", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "queued-once", model: agentRunModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const m0 = agent.start("m0");
    await m0.executionId;
    const seen: string[] = [];
    const redacting: Guardrail = (text) => {
      seen.push(text);
      return { action: "redact", text: text.replace(/\d{4}-\d{4}/, "[card]") };
    };
    const m1 = agent.start("pay with 4111-1111", { inputGuardrail: redacting });
    const executionId = await m1.executionId;
    gate.resolve();
    await expect(m0.result).resolves.toMatchObject({ outcome: "completed" });
    await expect(m1.result).resolves.toMatchObject({ outcome: "completed" });
    expect(seen).toEqual(["pay with 4111-1111"]);
    expect(await env.execution(executionId!)).toMatchObject({ input: "pay with [card]" });
    await env.close();
  }, 30_000);
});
