// An agent definition with many conversations (docs/decisions/0024):
//
//   const support = env.agent({ name: "support", model, tools, instructions });
//   const run = support.conversation(userId).start("Where is my order?");
//
// The definition is the model, tools and instructions, given once; a
// conversation is one agent id, with the seed's admission per id (one
// execution at a time). `conversation(id)` keeps nothing: handles are made
// on demand, and two handles of one id are the same conversation.

import { validateAgentId } from "./options.js";
import { Agent, type AgentHost, type AgentScope } from "./agent.js";
import type { DefinitionKind } from "./definition-kind.js";
import type { RecoveredExecution } from "./recovery.js";
import type { Json } from "../store/records.js";

/** A definition with many conversations, as `env.agent({ name, … })`
 * returns it: `conversation(id)` is one of them. */
export class DefinedAgent<OUTPUT = Json> {
  /** What each conversation's handle shares (agent.ts). */
  private readonly scope: AgentScope;

  /** @internal Made by `env.agent({ name })`, never by hand. */
  constructor(
    private readonly environment: AgentHost,
    /** @internal */
    readonly kind: DefinitionKind,
    private readonly recovered: Promise<RecoveredExecution[]>,
    /** Resolves once the unfinished executions of this definition's
     * conversations (found when the environment opened) are recovered. */
    readonly ready: Promise<void>,
  ) {
    this.scope = { environment, kind, ready };
  }

  /** The definition's name (stored with each of its executions). */
  get name(): string {
    return this.kind.name as string;
  }

  /** The conversation with this id (an agent id: one execution at a time,
   * its own memory). Free to call for any number of ids: nothing is written
   * or read until it starts. */
  conversation(conversationId: string): Agent<OUTPUT> {
    validateAgentId(conversationId, `${this.name}.conversation(id): the conversation id`);
    this.environment.conversations.checkOwnership(conversationId, this.kind);
    return new Agent<OUTPUT>(this.scope, conversationId);
  }

  /** What recovery did with this definition's unfinished executions. */
  recovery(): Promise<RecoveredExecution[]> {
    return this.recovered;
  }
}
