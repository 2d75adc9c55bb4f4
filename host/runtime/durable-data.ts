// Deleting durable data: an agent's, on request (`env.purgeAgent`), and
// finished executions past their retention (`env.prune`, and the
// background pruner of `runtime/retention.ts`). Unfinished and suspended
// executions are never touched.

import { InvalidInputError } from "../errors.js";
import { pruningStoreOf } from "../store/prune.js";
import { agentHasUnfinishedExecutions } from "../store/purge-refusal.js";
import type { ExecutionStore } from "../store/store.js";
import type { Conversations } from "./conversations.js";
import type { Coordinator } from "./coordinator.js";
import { validateAgentId } from "./options.js";
import { checkPruneOptions, Retention, type PruneOptions, type PruneReport, type RetentionOptions } from "./retention.js";

/** What the durable data's upkeep asks of its environment (environment.ts wires it). */
export interface DurableDataHost {
  readonly store: ExecutionStore;
  readonly coordinator: Coordinator;
  readonly conversations: Pick<Conversations, "liveEntry" | "release">;
  readonly visitor: boolean;
  assertOpen(what: string): void;
  assertOwner(what: string): void;
}

export class DurableData {
  /** Prunes finished executions (undefined: a visitor, or a store that cannot). */
  retention: Retention | undefined;

  constructor(private readonly host: DurableDataHost) {}

  /** Starts the background pruner of a store this process may prune. */
  startRetention(options: RetentionOptions): void {
    const store = pruningStoreOf(this.host.store);
    if (this.host.visitor || store === undefined) return;
    const { logger } = this.host.coordinator.settings;
    this.retention = new Retention({ store, options, logger, now: () => Date.now() });
    this.retention.start();
  }

  async purgeAgent(agentId: string): Promise<void> {
    validateAgentId(agentId);
    const { store, conversations } = this.host;
    this.host.assertOwner(`the purge of agent "${agentId}"`);
    if (conversations.liveEntry(agentId) !== undefined) {
      // The durable state decides first, as the store would for an agent
      // not live here: the core's entry is let go only once it can go.
      const unfinished = (await store.unfinishedExecutions()).filter((row) => row.agentId === agentId);
      if (unfinished.length > 0)
        throw agentHasUnfinishedExecutions(
          agentId,
          unfinished.map((row) => row.executionId),
        );
      await conversations.release(agentId);
    }
    await store.purgeAgent(agentId);
  }

  async prune(options?: PruneOptions): Promise<PruneReport> {
    this.host.assertOpen("env.prune()");
    const checked = checkPruneOptions(options);
    this.host.assertOwner("env.prune()");
    if (this.retention === undefined)
      throw new InvalidInputError(
        `env.prune() was refused: the store at ${this.host.store.path} cannot prune (a store the application implemented without pruneExecutions)`,
      );
    return this.retention.prune(checked);
  }

  async close(): Promise<void> {
    await this.retention?.close();
  }
}
