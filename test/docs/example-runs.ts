// How each file under examples/ is checked (docs/decisions/0046): the
// runtime it runs on and the lines it prints (examples-run.slow.test.ts
// runs them), or the test that runs it instead. samples.test.ts checks that
// every file is named here.

import { freshSchema, postgresUrl } from "../postgres/database.js";

const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.source;

export interface Runs {
  readonly runtime: "node" | "bun";
  /** The lines it prints, in order: each a string or a pattern of the whole line. */
  readonly prints: readonly (string | RegExp)[];
  /** Its environment variables beside the test's. */
  readonly env?: () => Record<string, string>;
}

/** How each example is checked. */
export const runs: Readonly<Record<string, Runs | { readonly runBy: string }>> = {
  "examples/quickstart.ts": {
    runtime: "node",
    prints: [
      "model_call_started",
      "model_call_finished",
      "tool_call_started",
      "tool_call_finished",
      "model_call_started",
      "model_call_finished",
      "done",
      new RegExp(`^Order 42 has shipped\\. \\d+ ${uuid}$`),
    ],
  },
  "examples/conversations.ts": {
    runtime: "node",
    prints: ['ada 200 {"output":"Order 42 is shipped."}', 'grace 200 {"output":"Order 7 is packed."}', "ada grace"],
  },
  "examples/busy-conversation.ts": {
    runtime: "node",
    prints: [
      "the queue is full: try again later",
      "second was queued",
      "first: CANCELLED",
      "second: Order 43 has shipped.",
      "the interrupting message: Your order is cancelled.",
    ],
  },
  "examples/from-the-ai-sdk.ts": { runtime: "node", prints: ['{"orderId":"42","status":"out for delivery"} 0.2 tool-calls,stop'] },
  "examples/retention.ts": {
    runtime: "node",
    prints: [
      'nothing finished an hour ago: {"executions":0,"steps":0,"journal":0,"approvals":0}',
      /^chat's, finished now, pruned: \{"executions":1,"steps":\d+,/,
      "left: refunds",
    ],
  },
  "examples/scheduled-starts.ts": {
    runtime: "node",
    prints: ["ran now: started, done: Send the daily digest", "next digest at 09:00 UTC: 09:00", "fired on its own: done: Ping", "active: 0 9 * * *"],
  },
  "examples/waiting-for-a-person.ts": {
    runtime: "node",
    prints: [
      'approval: approval Done: {"orderId":"42","refunded":30}',
      "refused: INVALID_INPUT",
      'wait: input Done: {"date":"2027-03-01"}',
      "a second value: APPROVAL_MISMATCH",
    ],
  },
  "examples/waiting-for-an-event.ts": {
    runtime: "node",
    prints: [
      "waiting: event payment:42",
      "refused: 400 INVALID_INPUT",
      "signal: 200 resumed",
      'output: Paid: {"amount":30,"currency":"EUR"}',
      "before its wait: stored",
      'then: Paid: {"amount":12,"currency":"EUR"}',
    ],
  },
  "examples/child-agents.ts": {
    runtime: "node",
    prints: [
      "the child's approval names its parent: true",
      'output: research said "stock said {\\"item\\":\\"kettle\\",\\"inStock\\":3}"',
      "tree: completed completed (parent linked)",
    ],
  },
  "examples/waiting-for-time.ts": {
    runtime: "node",
    prints: ["timer: timer fired at its due time", "fired now: a day early", "a second fire: APPROVAL_MISMATCH", 'rating: Back: {"timedOut":true}'],
  },
  "examples/cancel-retry.ts": {
    runtime: "node",
    prints: [
      "the first run: CANCELLED",
      "cancelled: cancelled",
      "retried: completed Order 42 has shipped.",
      /^timeline from the retry on: retried .* terminal$/,
    ],
  },
  "examples/hono-chat.ts": {
    runtime: "node",
    prints: [
      /^200 text\/event-stream(;.*)? start start-step tool-input-available tool-output-available finish-step start-step text-start (text-delta )+text-end finish-step finish$/,
      /^resumed after the third chunk: start tool-output-available finish-step start-step text-start (text-delta )+text-end finish-step finish$/,
    ],
  },
  "examples/chat-transport.ts": {
    runtime: "node",
    prints: [
      new RegExp(`^cut off after 4 events, then GET /api/chat/chat-1/stream\\?executionId=${uuid}&resumeAt=\\d+(\\.t?\\d+)?$`),
      "step-start, text: Order 42 is out for delivery and arrives on Monday.",
    ],
  },
  "examples/dashboard-bun.ts": { runtime: "bun", prints: [/^http:\/\/127\.0\.0\.1:\d+\/admin\/agents\/\?token=/, "page 200 true without the token 403"] },
  // The test server, a fresh schema dropped after the test (test/postgres/database.ts).
  "examples/postgres.ts": {
    runtime: "node",
    prints: ["Order 42 has shipped.", "sent twice, ran once: true"],
    env: () => ({ DATABASE_URL: postgresUrl, PHRONOMY_SCHEMA: freshSchema() }),
  },
  "examples/agent.ts": { runtime: "node", prints: ["completed Order 42 is out for delivery."] },
  "examples/support-agent.ts": { runBy: "test/cli/run.slow.test.ts" },
  "examples/chat-server.ts": { runBy: "test/chat/example-server.test.ts" },
};
