// Phronomy for TypeScript: the public API.
//
//   const env = await Phronomy.open({ store: "./agents.db" });
//   const agent = env.agent({ id: "support", model, tools, instructions });
//   const run = agent.start("Where is order 42?");
//   const result = await run.result;
//   await env.close();

import { Environment, type OpenOptions } from "./runtime/environment.js";

export const Phronomy = {
  /** Opens an environment on a store; see `OpenOptions`. */
  open(options: OpenOptions): Promise<Environment> {
    return Environment.open(options);
  },
};

export { Environment, type OpenOptions } from "./runtime/environment.js";
export { Agent } from "./runtime/agent.js";
export type { Run, RunResult } from "./runtime/run.js";
export type { ExecutionEvent, ExecutionEventType, ApprovalRequest, HandoffRequest, EventListener } from "./runtime/events.js";
export type {
  AgentDefinition, StartOptions, Guardrail, GuardrailVerdict, ApprovalPolicy, ApprovalListener, CallbackErrorPolicy, Logger,
} from "./runtime/options.js";
export { tool, handoff, type ToolSet, type ToolExecutionContext } from "./agent/tools.js";
export * from "./errors.js";
export type { ExecutionRow, StoredStep, UsageTotals, Json } from "./store/records.js";
