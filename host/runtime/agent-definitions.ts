// `env.agent()`: a definition by `id` (one conversation) or by `name`
// (conversations by id, docs/decisions/0024). Nothing is written or read
// per definition: the unfinished executions the environment's one scan
// found are recovered for the definition they belong to. Tool sets shared
// by many definitions are resolved (checked, their JSON Schemas derived)
// once.

import { randomUUID } from "node:crypto";
import { resolveTools } from "../agent/tools.js";
import { InvalidInputError } from "../errors.js";
import { Agent, type AgentHost } from "./agent.js";
import type { AgentRecoveries } from "./agent-recoveries.js";
import type { Conversations } from "./conversations.js";
import { DefinedAgent } from "./defined-agent.js";
import { callSettingsOf, modelRetrySettingsOf } from "./model-settings.js";
import { MEMORY_WINDOW_DEFAULT, validateAgentDefinition, type AgentDefinition, type AgentSettings, type ConversationDefinition } from "./options.js";
import type { Retention } from "./retention.js";

/** What definitions ask of their environment (environment.ts wires it). */
export interface AgentDefinitionsHost {
  readonly conversations: Conversations;
  readonly recoveries: Pick<AgentRecoveries, "report">;
  /** The environment, as the handles made here use it. */
  readonly agents: AgentHost;
  /** The pruner, if the store prunes here. */
  retention(): Retention | undefined;
}

/** A definition made here, as `env.admin` starts conversations of it. */
export interface DefinedHandle {
  readonly kind: "conversations" | "agent";
  /** The conversation to start on: the one named, or a new one (a named
   * definition); the agent itself (one defined by id). */
  conversation(conversationId: string | undefined): Agent;
}

export class AgentDefinitions {
  private readonly toolResolutions = new WeakMap<object, ReturnType<typeof resolveTools>>();
  /** Every definition made here, by name or id, in the order made. */
  readonly handles = new Map<string, DefinedHandle>();

  constructor(private readonly host: AgentDefinitionsHost) {}

  /** Checks and adds a definition; defining the same id, or name, twice is refused. */
  define(given: AgentDefinition | ConversationDefinition): Agent | DefinedAgent {
    const definition = given as Partial<AgentDefinition & ConversationDefinition> & AgentSettings;
    validateAgentDefinition(definition);
    // Its model calls' settings, read now, as checked (decision 0067).
    callSettingsOf(definition);
    modelRetrySettingsOf(definition);
    const { conversations } = this.host;
    const name = definition.name;
    if (name === undefined ? conversations.isDefinedId(definition.id as string) : conversations.isDefinedName(name)) {
      const which = name === undefined ? `agent "${definition.id}"` : `the definition named "${name}"`;
      throw new InvalidInputError(`${which} is already defined in this environment; reuse the ${name === undefined ? "Agent" : "DefinedAgent"} it returned`);
    }
    // Retention is the definition's: an agent defined by id may keep its
    // finished executions for a time of its own; a named definition's
    // conversations use the environment's (decision 0024, "Retention").
    const retention = this.host.retention();
    if (name === undefined) retention?.defineAgent(definition.id as string, definition.retention, definition.memoryWindow ?? MEMORY_WINDOW_DEFAULT);
    else retention?.defineConversations(name, definition.retention, definition.memoryWindow ?? MEMORY_WINDOW_DEFAULT);
    const kind = { definition, name, id: name === undefined ? definition.id : undefined, tools: this.resolvedTools(definition.tools) };
    const recovered = conversations.define(kind);
    recovered.catch(() => undefined);
    const ready = recovered.then(
      () => undefined,
      () => undefined,
    );
    if (name !== undefined) {
      const defined = new DefinedAgent(this.host.agents, kind, recovered, ready);
      this.handles.set(name, { kind: "conversations", conversation: (id) => defined.conversation(id ?? `chat-${randomUUID()}`) });
      return defined;
    }
    const agentId = definition.id as string;
    this.host.recoveries.report(agentId, recovered);
    const agent = new Agent({ environment: this.host.agents, kind, ready }, agentId);
    this.handles.set(agentId, { kind: "agent", conversation: () => agent });
    return agent;
  }

  private resolvedTools(tools: AgentSettings["tools"]): ReturnType<typeof resolveTools> {
    if (tools === undefined || typeof tools !== "object" || tools === null) return resolveTools(tools);
    let resolved = this.toolResolutions.get(tools);
    if (!resolved) {
      resolved = resolveTools(tools);
      this.toolResolutions.set(tools, resolved);
    }
    return resolved;
  }
}
