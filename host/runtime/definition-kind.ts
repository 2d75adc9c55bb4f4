// One agent definition as the application gave it (`env.agent(...)`): the
// words the conversations' bookkeeping (conversations.ts) and the handles
// (agent.ts, defined-agent.ts) share, kept below both.

import type { ResolvedTool } from "../agent/tools.js";
import type { AgentSettings } from "./options.js";

/** One definition: the agent as the application described it once. */
export interface DefinitionKind {
  readonly definition: AgentSettings;
  /** Set for `env.agent({ name })`; undefined for `env.agent({ id })`. */
  readonly name: string | undefined;
  /** Set for `env.agent({ id })`: its one conversation. */
  readonly id: string | undefined;
  readonly tools: readonly ResolvedTool[];
}
