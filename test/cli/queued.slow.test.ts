// Queued messages in the CLI (docs/decisions/0025): `phronomy ls --status
// queued` lists the messages waiting behind a busy conversation, and
// `phronomy show` prints one with its state `queued` and its timeline's
// `queued` step — through real processes, on a store left with messages
// queued by an environment that closed while they waited.

import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { agentRunModel, deferred, lookupTool } from "../runtime/helpers.js";
import { cli, jsonOf, temporaryStore } from "./helpers.js";

describe("phronomy ls and show with queued messages", () => {
  it("lists queued messages with --status queued and shows one as queued", async () => {
    const store = await temporaryStore();
    const env = await Phronomy.open({ store, logger: { warn: () => undefined } });
    const gate = deferred();
    const agent = env.agent({ id: "chat", model: agentRunModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const running = agent.start("first");
    await running.executionId;
    const queuedId = await agent.start("second").executionId;
    const closing = env.close();
    gate.resolve();
    await closing;

    const listed = jsonOf(await cli(["ls", "--store", store, "--status", "queued", "--json"]));
    expect(listed.executions).toEqual([expect.objectContaining({ executionId: queuedId, agentId: "chat", status: "queued", input: "second" })]);
    const table = await cli(["ls", "--store", store]);
    expect(table.stdout).toContain("queued");
    const shown = await cli(["show", queuedId, "--store", store]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/state\s+queued/);
    expect(shown.stdout).toContain("behind the running execution, position 1");
  });
});
