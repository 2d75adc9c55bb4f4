// Real models through the CLI: `--model openai-compatible:<model>
// --base-url <url>` (and the PHRONOMY_* variables) make an agent module
// without a model call an OpenAI-compatible endpoint — here a local
// chat-completions server (chat-server.ts) — with tool calls, both as one
// JSON completion and streamed as server-sent events.

import { describe, expect, it, onTestFinished } from "vitest";
import { API_KEY, TOOL_CALL_ID, startChatServer, type ChatServer } from "./chat-server.js";
import { cli, describeResult, errorLines, fixture, jsonOf, temporaryStore } from "./helpers.js";

/** A server of the test's own (the tests run concurrently), closed when it ends. */
async function chatServer(): Promise<ChatServer> {
  const server = await startChatServer();
  onTestFinished(() => server.close());
  return server;
}

const ANSWER = "Order 42: the blue kettle is out for delivery.";

describe.concurrent("phronomy run with an OpenAI-compatible model", () => {
  it("--model and --base-url: the tool call is run and its result sent back; the answer is printed", async () => {
    const store = await temporaryStore();
    const server = await chatServer();
    const result = await cli(
      [
        "run",
        fixture("order-agent.ts"),
        "Where is order 42?",
        "--store",
        store,
        "--json",
        "--model",
        "openai-compatible:test-model",
        "--base-url",
        server.baseUrl,
      ],
      { env: { PHRONOMY_API_KEY: API_KEY } },
    );
    expect(result.code, describeResult(result)).toBe(0);
    const output = jsonOf(result);
    expect(output).toMatchObject({ agentId: "orders", outcome: "completed", output: ANSWER, modelCalls: 2, toolCalls: 1 });
    expect(output.usage).toEqual({ inputTokens: 80, outputTokens: 24, totalTokens: 104 });

    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests;
    expect(first!.authorization).toBe(`Bearer ${API_KEY}`);
    expect(first!.body.model).toBe("test-model");
    expect(first!.body.stream).not.toBe(true);
    expect(first!.body.messages[0]).toEqual({ role: "system", content: "You answer questions about orders. Look them up first." });
    expect(first!.body.messages.at(-1)).toEqual({ role: "user", content: "Where is order 42?" });
    expect(first!.body.tools).toEqual([
      expect.objectContaining({
        type: "function",
        function: expect.objectContaining({
          name: "lookupOrder",
          parameters: expect.objectContaining({ type: "object", properties: { orderId: { type: "string" } } }),
        }),
      }),
    ]);
    const assistant = second!.body.messages.find((message) => message.role === "assistant");
    expect(assistant?.tool_calls?.[0]).toMatchObject({ id: TOOL_CALL_ID, function: { name: "lookupOrder", arguments: JSON.stringify({ orderId: "42" }) } });
    const toolMessage = second!.body.messages.find((message) => message.role === "tool");
    expect(toolMessage?.tool_call_id).toBe(TOOL_CALL_ID);
    expect(JSON.parse(toolMessage!.content as string)).toMatchObject({ item: "blue kettle", key: `${output.executionId}:${TOOL_CALL_ID}` });
  });

  it("PHRONOMY_MODEL / PHRONOMY_BASE_URL with --stream: server-sent events, the text streamed to stdout", async () => {
    const store = await temporaryStore();
    const server = await chatServer();
    const result = await cli(["run", fixture("order-agent.ts"), "Where is order 42?", "--store", store, "--stream"], {
      env: { PHRONOMY_MODEL: "openai-compatible:test-model", PHRONOMY_BASE_URL: server.baseUrl, PHRONOMY_API_KEY: API_KEY },
    });
    expect(result.code, describeResult(result)).toBe(0);
    expect(result.stdout.trim()).toBe(ANSWER);
    expect(result.stderr).toMatch(/tool lookupOrder started · idempotency key [0-9a-f-]+:call_lookup_1/);
    expect(result.stderr).toMatch(/✔ completed in .* · 2 model calls · 1 tool call · 104 tokens/);
    expect(server.requests.map((request) => request.body.stream)).toEqual([true, true]);
    expect(server.requests[0]!.body.stream_options).toEqual({ include_usage: true });
  });

  it("a refused key is the typed error MODEL_FAILED and exit 1; the failure is recorded in the store", async () => {
    const store = await temporaryStore();
    const server = await chatServer();
    const result = await cli(
      [
        "run",
        fixture("order-agent.ts"),
        "Where is order 42?",
        "--store",
        store,
        "--json",
        "--model",
        "openai-compatible:test-model",
        "--base-url",
        server.baseUrl,
      ],
      { env: { PHRONOMY_API_KEY: "sk-wrong" } },
    );
    expect(result.code, describeResult(result)).toBe(1);
    const output = jsonOf(result);
    expect(output).toMatchObject({ outcome: "failed", error: { code: "MODEL_FAILED", message: expect.stringContaining("Incorrect API key") } });
    const listed = jsonOf(await cli(["ls", "--store", store, "--json"]));
    expect(listed.executions).toEqual([
      expect.objectContaining({ executionId: output.executionId, outcome: "failed", error: expect.objectContaining({ code: "MODEL_FAILED" }) }),
    ]);
  });

  it("model settings are checked before anything is opened: an unknown provider, a model without a base URL", async () => {
    const store = await temporaryStore();
    const unknown = await cli(["run", fixture("order-agent.ts"), "hi", "--store", store, "--model", "acme:large"]);
    expect(unknown.code).toBe(2);
    expect(errorLines(unknown)).toEqual([expect.stringContaining("[USAGE] --model acme:large: expected <provider>:<model>")]);
    const noUrl = await cli(["run", fixture("order-agent.ts"), "hi", "--store", store, "--model", "openai-compatible:x"]);
    expect(noUrl.code).toBe(1);
    expect(errorLines(noUrl)).toEqual([expect.stringContaining("[MODEL_NOT_CONFIGURED] --model openai-compatible:x needs the endpoint")]);
    const noModel = await cli(["run", fixture("order-agent.ts"), "hi", "--store", store]);
    expect(noModel.code).toBe(1);
    expect(errorLines(noModel)).toEqual([expect.stringContaining(`[MODEL_NOT_CONFIGURED] agent "orders"`)]);
  });
});
