// The execution flows through the public API, on real SQLite files: a
// completed agent run, admission refusals, memory, guardrails, budgets and
// limits, agent lifecycle, option validation, events and waiters.

import { describe, expect, it } from "vitest";
import { AgentBusyError, AgentClosedError, InvalidInputError, PhronomyError, RuntimeShutdownError, handoff, type ExecutionEvent } from "../../host/index.js";
import { agentRunModel, deferred, lookupTool, openEnvironment, scriptedModel, turnOf, type RecordedCall } from "./helpers.js";

describe("an agent run: model → tool → model → tool → model", () => {
  it("completes, durable at every step, with idempotency keys persisted before each tool ran", async () => {
    const env = await openEnvironment();
    const calls: RecordedCall[] = [];
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls }) } });
    const run = agent.start("Where is order 42?");
    const result = await run.result;
    const executionId = await run.executionId;
    expect(result).toMatchObject({ executionId, agentId: "support", outcome: "completed", output: "Order 42 has shipped." });
    expect(result.usage.totalTokens).toBeGreaterThan(0);
    expect(calls.map((call) => call.idempotencyKey)).toEqual([`${executionId}:call-0-0`, `${executionId}:call-1-0`]);
    const timeline = await env.timeline(executionId);
    expect(timeline.map((step) => step.kind)).toEqual([
      "input",
      "provider_barrier",
      "model_response",
      "tool_barrier",
      "tool_results",
      "provider_barrier",
      "model_response",
      "tool_barrier",
      "tool_results",
      "provider_barrier",
      "model_response",
      "terminal",
    ]);
    const row = await env.execution(executionId);
    expect(row).toMatchObject({ status: "terminal", outcome: "completed", output: "Order 42 has shipped." });
    // prepare + 5 barriers + terminal: revision 1 → 7.
    expect(row?.revision).toBe(7);
  });

  it("writes its first provider barrier with the preparation: 6 store operations, the model called under that barrier's call id", async () => {
    const env = await openEnvironment();
    const operations: string[] = [];
    const run = env.store.run.bind(env.store);
    env.store.run = ((operation) => {
      operations.push(operation.type);
      return run(operation);
    }) as typeof env.store.run;
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const result = await agent.start("Where is order 42?").result;
    expect(operations).toEqual(["prepareExecution", "toolBarrier", "providerBarrier", "toolBarrier", "providerBarrier", "terminalCommit"]);
    const timeline = await env.timeline(result.executionId);
    const firstBarrier = timeline.find((step) => step.kind === "provider_barrier")!.payload as { callId: string; revision: number };
    const firstResponse = timeline.find((step) => step.kind === "model_response")!.payload as { callId: string };
    expect(firstBarrier.revision).toBe(2);
    expect(firstResponse.callId).toBe(firstBarrier.callId);
    expect((await env.execution(result.executionId))?.revision).toBe(7);
  });

  it("streams progress and terminal events to onEvent and run.events alike", async () => {
    const env = await openEnvironment();
    const seen: string[] = [];
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const run = agent.start("Where is order 42?", { onEvent: (event) => seen.push(event.type) });
    const streamed: ExecutionEvent[] = [];
    for await (const event of run.events) streamed.push(event);
    expect(streamed.map((event) => event.type)).toEqual(seen);
    expect(seen.filter((type) => type === "model_call_started")).toHaveLength(3);
    expect(seen.filter((type) => type === "tool_call_finished")).toHaveLength(2);
    expect(seen.at(-1)).toBe("done");
  });
});

describe("admission", () => {
  it("refuses a second start while the agent is busy with AgentBusyError, then admits again", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("first");
    await first.executionId;
    const second = agent.start("second");
    await expect(second.result).rejects.toBeInstanceOf(AgentBusyError);
    await expect(second.result).rejects.toMatchObject({ code: "AGENT_BUSY", agentId: "support" });
    gate.resolve();
    await expect(first.result).resolves.toMatchObject({ outcome: "completed" });
    await expect(agent.start("third").result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("refuses starts of a closed agent with AgentClosedError; the running one finishes", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const running = agent.start("first");
    await running.executionId;
    await agent.close();
    gate.resolve();
    await expect(running.result).resolves.toMatchObject({ outcome: "completed" });
    await expect(agent.start("again").result).rejects.toBeInstanceOf(AgentClosedError);
  });

  it("keeps environments isolated: the same agent id is busy in one and free in another", async () => {
    const first = await openEnvironment();
    const second = await openEnvironment();
    const gate = deferred();
    const busy = first.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const free = second.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const running = busy.start("one");
    await running.executionId;
    await expect(free.start("two").result).resolves.toMatchObject({ outcome: "completed" });
    gate.resolve();
    await running.result;
  });
});

describe("what an invocation carries", () => {
  it("remembers earlier executions of the same agent (its journal)", async () => {
    const env = await openEnvironment();
    const prompts: string[][] = [];
    const model = scriptedModel(({ messages }) => {
      prompts.push(
        messages.map((message) =>
          message.role === "user" ? `user:${message.content}` : message.role === "assistant" ? `assistant:${message.text}` : message.role,
        ),
      );
      return { text: `answer ${prompts.length}` };
    });
    const agent = env.agent({ id: "memory", model });
    await agent.start("my name is Ada").result;
    await agent.start("what is my name?").result;
    expect(prompts[1]).toEqual(["user:my name is Ada", "assistant:answer 1", "user:what is my name?"]);
  });

  it("an agent's first execution reads no journal (its store said it is the first); the next reads it and remembers", async () => {
    const env = await openEnvironment();
    // The store behind the environment, to count its journal reads.
    const store = (env as unknown as { store: { readJournal(agentId: string, limit: number): Promise<unknown[]> } }).store;
    const journalReads: string[] = [];
    const readJournal = store.readJournal.bind(store);
    store.readJournal = (agentId, limit) => {
      journalReads.push(agentId);
      return readJournal(agentId, limit);
    };
    const prompts: number[] = [];
    const model = scriptedModel(({ messages }) => {
      prompts.push(messages.length);
      return { text: "ok" };
    });
    const agent = env.agent({ id: "first-read", model });
    await agent.start("hello").result;
    expect(journalReads).toEqual([]);
    await agent.start("again").result;
    expect(journalReads).toEqual(["first-read"]);
    expect(prompts).toEqual([1, 3]);
    // A named definition's conversation: its first run reads nothing either.
    const conversations = env.agent({ name: "support", model });
    await conversations.conversation("user-1").start("hi").result;
    await conversations.conversation("user-1").start("hi again").result;
    expect(journalReads).toEqual(["first-read", expect.stringContaining("user-1")]);
    expect(prompts).toEqual([1, 3, 1, 3]);
  });

  it("bounds the memory to the agent's window", async () => {
    const env = await openEnvironment();
    const prompts: number[] = [];
    const model = scriptedModel(({ messages }) => {
      prompts.push(messages.length);
      return { text: "ok" };
    });
    const agent = env.agent({ id: "memory", model, memoryWindow: 2 });
    for (let index = 0; index < 4; index += 1) await agent.start(`message ${index}`).result;
    expect(prompts).toEqual([1, 3, 3, 3]);
  });

  it("blocks an input with the input guardrail: failed INPUT_BLOCKED, nothing sent to the model", async () => {
    const env = await openEnvironment();
    const model = scriptedModel([{ text: "never" }]);
    const agent = env.agent({
      id: "guarded",
      model,
      inputGuardrail: (text) => (text.includes("secret") ? { action: "block", reason: "contains a secret" } : { action: "allow" }),
    });
    const run = agent.start("my secret is 1234");
    await expect(run.result).rejects.toMatchObject({ code: "INPUT_BLOCKED" });
    expect(model.turnsServed).toBe(0);
    const row = await env.execution((await run.executionId.catch(() => "")) || (await env.executions({ agentId: "guarded" }))[0]!.executionId);
    expect(row).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "INPUT_BLOCKED" } });
  });

  it("redacts an input: the filtered text is what is persisted and sent", async () => {
    const env = await openEnvironment();
    const sent: string[] = [];
    const model = scriptedModel(({ messages }) => {
      sent.push(JSON.stringify(messages));
      return { text: "ok" };
    });
    const agent = env.agent({ id: "redacting", model, inputGuardrail: (text) => ({ action: "redact", text: text.replace(/\d{4}/g, "****") }) });
    const run = agent.start("card 1234");
    await run.result;
    expect(sent[0]).toContain("card ****");
    expect(sent[0]).not.toContain("1234");
    const row = await env.execution(await run.executionId);
    expect(row?.input).toBe("card ****");
  });

  it("blocks an output with the output guardrail: failed OUTPUT_BLOCKED", async () => {
    const env = await openEnvironment();
    const agent = env.agent({
      id: "guarded",
      model: scriptedModel([{ text: "the password is hunter2" }]),
      outputGuardrail: (text) => (text.includes("password") ? { action: "block", reason: "leaks a password" } : { action: "allow" }),
    });
    await expect(agent.start("tell me").result).rejects.toMatchObject({ code: "OUTPUT_BLOCKED" });
  });

  it("ends an execution over its token budget with BUDGET_EXCEEDED", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "budget", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(agent.start("Where is order 42?", { tokenBudget: 10 }).result).rejects.toMatchObject({ code: "BUDGET_EXCEEDED" });
  });

  it("ends an execution past its maximum of model turns with MAX_TURNS_EXCEEDED", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "turns", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(agent.start("Where is order 42?", { maxTurns: 1 }).result).rejects.toMatchObject({ code: "MAX_TURNS_EXCEEDED" });
  });

  it("rejects unknown options with InvalidInputError naming the key", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "strict", model: agentRunModel() });
    const run = agent.start("hi", { timeout: 5 } as never);
    await expect(run.result).rejects.toBeInstanceOf(InvalidInputError);
    await expect(run.result).rejects.toThrow(/unknown option "timeout"/);
    expect(() => env.agent({ id: "other", model: agentRunModel(), temprature: 1 } as never)).toThrow(/unknown option "temprature"/);
    await expect(openEnvironment({ stor: "x" } as never)).rejects.toThrow(/unknown option "stor"/);
  });
});

describe("agent lifecycle", () => {
  it("refuses to purge an agent while it holds an admission, then purges its data", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "purged", model: agentRunModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const run = agent.start("one");
    await run.executionId;
    await expect(env.purgeAgent("purged")).rejects.toMatchObject({ code: "AGENT_BUSY" });
    gate.resolve();
    await run.result;
    await env.purgeAgent("purged");
    expect(await env.executions({ agentId: "purged" })).toEqual([]);
  });
});

describe("handoff", () => {
  it("ends with handed_off carrying the request; the target agent starts from it", async () => {
    const env = await openEnvironment();
    const triage = env.agent({
      id: "triage",
      model: scriptedModel([{ toolCalls: [{ toolName: "toBilling", input: { reason: "a refund question" } }] }]),
      tools: { toBilling: handoff({ to: "billing", description: "Billing questions" }) },
    });
    const billing = env.agent({
      id: "billing",
      model: scriptedModel(({ messages }) => ({
        text: `billing saw: ${messages.at(-1)?.role === "user" ? (messages.at(-1) as { content: string }).content : ""}`,
      })),
    });
    const events: string[] = [];
    const result = await triage.start("I want my money back", { onEvent: (event) => events.push(event.type) }).result;
    expect(result.outcome).toBe("handed_off");
    expect(result.handoff).toMatchObject({ fromAgentId: "triage", targetAgentId: "billing", reason: "a refund question", input: "I want my money back" });
    expect(events).toContain("handoff");
    const followed = await billing.startFromHandoff(result.handoff!).result;
    expect(followed.output).toContain("I want my money back");
  });
});

describe("waiters", () => {
  it("settles many waiters on one execution together, and a late waiter from the durable row", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const run = agent.start("Where is order 42?");
    const executionId = await run.executionId;
    const others = [env.wait(executionId), env.wait(executionId), env.wait(executionId)];
    gate.resolve();
    const results = await Promise.all([run.result, ...others.map((other) => other.result)]);
    for (const result of results) expect(result).toEqual(results[0]);
    await expect(env.wait(executionId).result).resolves.toMatchObject({ executionId, output: "Order 42 has shipped." });
  });
});

describe("the callback-error policy", () => {
  const throwingListener = (event: ExecutionEvent): void => {
    if (event.type === "model_call_started") throw new Error("listener bug");
  };

  it("reports a throwing listener and still completes (report, the default)", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(agent.start("hi", { onEvent: throwingListener }).result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("fails a successful run with StreamCallbackError under fail_task when the listener throws on done (a progress event is only reported: test/runtime/observers.test.ts)", async () => {
    const env = await openEnvironment({ callbackErrorPolicy: "fail_task" });
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const throwingOnDone = (event: ExecutionEvent): void => {
      if (event.type === "done") throw new Error("listener bug");
    };
    const failure = await agent.start("hi", { onEvent: throwingOnDone }).result.catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "STREAM_CALLBACK" });
    expect((failure as PhronomyError).cause).toMatchObject({ message: "listener bug" });
  });
});

describe("close", () => {
  it("drains: refuses new starts with RuntimeShutdownError, finishes in-flight work, and a second close is harmless", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const running = agent.start("one");
    await running.executionId;
    const closing = env.close();
    await expect(agent.start("two").result).rejects.toBeInstanceOf(RuntimeShutdownError);
    gate.resolve();
    await expect(running.result).resolves.toMatchObject({ outcome: "completed" });
    await closing;
    await env.close();
  });
});

export { turnOf };
