// Callers waiting on executions (docs/decisions/0018): `env.wait` on one
// live here (another observer), on one run by another process (followed
// from the store until it ends), or on one already ended (its durable
// outcome); a keyed start whose execution is in the store already; and the
// callers of conversations whose lease moved away (lost-leases.ts), handed
// to the one follower of executions run elsewhere (durable-watch.ts).

import { MessageKind as M, ObservedRowVerdict } from "../../assembly/abi.js";
import { ExecutionRehydrationRequiredError, type PhronomyError, RuntimeShutdownError } from "../errors.js";
import type { ExecutionRow } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";
import type { ByIdPlacement } from "./by-id-placement.js";
import type { ControlLoop } from "./control-loop.js";
import type { ConversationQueues } from "./conversation-queue.js";
import type { Coordinator } from "./coordinator.js";
import { emitToWaiter, outcomeEventOf, rejectSuspendedObserver, resolveWaiter, settleWaiterWithError } from "./delivery.js";
import { DurableWatches } from "./durable-watch.js";
import { settleFromRow } from "./durable-outcome.js";
import { followAdmitted, reportLostConversations } from "./lost-leases.js";
import { leasingStoreOf } from "./leases.js";
import { queueReaderOf } from "../store/queue.js";
import type { RemoteStarts } from "./remote-start.js";
import type { AgentEntry } from "./requests.js";
import { Waiter, type Run, type Waiting } from "./run.js";
import { whenRead } from "./rehydration.js";
import { judgeObservedRow } from "./observed-row.js";
import { asPhronomyError } from "./session.js";

/** What the followers ask of their environment (environment.ts wires it). */
export interface FollowersHost {
  readonly store: ExecutionStore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  readonly queues: Pick<ConversationQueues, "observe" | "leaseLost" | "holds">;
  closed(): boolean;
  /** Starts filed for the processes holding their partitions, if this process files them. */
  remoteStarts(): RemoteStarts | undefined;
  /** Where a wait on a running execution of this agent not live here
   * goes: the core's verdict (`FileForOwner`: another process runs it). */
  placeWait(agentId: string): Promise<ByIdPlacement>;
}

export class Followers {
  /** `env.wait` on executions other processes run (docs/decisions/0018). */
  private durableWatches: DurableWatches | undefined;

  constructor(private readonly host: FollowersHost) {
    host.coordinator.onFollowAdmitted = (entry, generation) =>
      followAdmitted(entry, generation, (executionId, agentId, waiter) => this.followElsewhere(agentId, executionId, waiter));
  }

  /** Waits for an execution's outcome: another observer of a live
   * execution, or the durable outcome of one that already ended. */
  wait(executionId: string): Run {
    return this.observer(executionId, undefined);
  }

  /** `wait`; `queuedOf` names the agent when the execution is known to
   * exist (a keyed start refused for it): no row yet is then a message
   * queued at another process, followed until it runs. */
  private observer(executionId: string, queuedOf: string | undefined): Run {
    const waiter = new Waiter("", undefined, true);
    const settings = this.host.coordinator.settings;
    this.host.loop.post(() => this.observe(executionId, waiter, queuedOf), {
      completion: { fail: (error) => settleWaiterWithError(waiter, asPhronomyError(error, "INTERNAL"), settings) },
      label: `a wait for execution ${executionId}`,
    });
    return waiter;
  }

  /** On the loop: `waiter` observes the execution live here, its queued
   * message, or else its row. */
  private observe(executionId: string, waiter: Waiter, queuedOf: string | undefined): void {
    const { coordinator } = this.host;
    const settings = coordinator.settings;
    const entry = coordinator.entryById(executionId);
    if (entry !== undefined && coordinator.heldForRecovery(entry)) {
      // Held after a store failure: it moves again only through env.recover(), which the caller must know.
      settleWaiterWithError(
        waiter,
        new ExecutionRehydrationRequiredError(
          `execution ${executionId} is held for recovery after a store failure; call env.recover() (it recovers the execution from its stored row), then wait again`,
          { executionId, agentId: entry.agent.id },
        ),
        settings,
      );
      return;
    }
    const again = (): void => this.observe(executionId, waiter, queuedOf);
    const failed = (error: unknown): void => settleWaiterWithError(waiter, asPhronomyError(error, "STORE"), settings);
    // Let go of while suspended: its pending approval is read back first.
    if (entry?.suspended && whenRead(coordinator, entry, again, failed)) return;
    if (entry?.suspended) {
      // Told here, not attached through the core: the core counts
      // attached observers until the execution ends (WaitersMax), and a
      // handler polling a suspended execution must not use them up.
      rejectSuspendedObserver(waiter, { executionId, agentId: entry.agent.id }, entry.approvalRequest, settings);
      return;
    }
    if (this.host.queues.observe(executionId, waiter)) return;
    if (entry) {
      const handle = coordinator.requests.add({ type: "attach", waiter });
      coordinator.apply(M.AttachWaiter, entry.slot, entry.generation, handle);
      return;
    }
    this.host.store
      .getExecution(executionId)
      .then((row) => this.observeRow(executionId, row, waiter, queuedOf))
      .catch((error: unknown) => settleWaiterWithError(waiter, asPhronomyError(error, "STORE"), settings));
  }

  /** A wait on an execution not live here, its row read: a start filed
   * for (or a message queued in) another process is waited for
   * (docs/decisions/0031); a running one is followed where the core
   * places it (another process runs it); else settled from the row. */
  private async observeRow(executionId: string, row: ExecutionRow | undefined, waiter: Waiter, queuedOf: string | undefined): Promise<void> {
    const remoteStarts = this.host.remoteStarts();
    if (row === undefined && remoteStarts !== undefined && !this.host.closed()) return remoteStarts.observe(executionId, waiter);
    if (row !== undefined || queuedOf === undefined) return this.observeFound(executionId, row, waiter);
    // Queued at the process holding the conversation (no inbox to file
    // with): its row comes when it is prepared or cancelled (decision 0063, 18).
    const found = await this.queuedOrRow(executionId);
    if (found === "queued") return this.follower().follow(executionId, queuedOf, waiter);
    return this.observeFound(executionId, found, waiter);
  }

  /** The row read (or none): a running execution is followed where the
   * core places it, anything else settled from the row. The core decides
   * (`observedRowVerdict`, decision 0110). */
  private async observeFound(executionId: string, row: ExecutionRow | undefined, waiter: Waiter): Promise<void> {
    const settings = this.host.coordinator.settings;
    const verdict = await judgeObservedRow(
      settings.core,
      row,
      (agentId) => this.host.placeWait(agentId),
      () => this.host.closed(),
    );
    if (verdict === ObservedRowVerdict.SettleShutdown && row !== undefined) {
      return settleWaiterWithError(waiter, new RuntimeShutdownError(`a wait for execution ${executionId}`, { executionId, agentId: row.agentId }), settings);
    }
    if (verdict === ObservedRowVerdict.Watch && row !== undefined) return this.follower().watch(executionId, row.agentId, waiter);
    // `SettleFromRow`; `None` cannot come of these facts: settled from
    // the row, as before.
    settleFromRow(waiter, executionId, row, settings);
  }

  /** A message still queued under the id, or else its row read again (it
   * may have been prepared since the first read), or none. */
  private async queuedOrRow(executionId: string): Promise<"queued" | ExecutionRow | undefined> {
    const reader = queueReaderOf(this.host.store);
    if (reader !== undefined && (await reader.queuedMessage(executionId)) !== undefined) return "queued";
    return this.host.store.getExecution(executionId);
  }

  /** A keyed start whose execution is in the store already: `waiter`
   * follows it (from the store on PostgreSQL; as `env.wait` otherwise).
   * One admitted, being prepared or queued here is followed here, as
   * `env.wait` follows it: its row may not be written yet, and a filer's
   * read finding neither row nor filing refuses the follow (the
   * simulation's seed 2032: a second start of a key while the first was
   * being prepared here was told INVALID_INPUT). */
  followExecution(agentId: string, executionId: string, waiter: Waiter, refusal?: PhronomyError): void {
    const remoteStarts = this.host.remoteStarts();
    const liveHere = this.host.coordinator.entryById(executionId) !== undefined || this.host.queues.holds(executionId);
    if (remoteStarts !== undefined && !liveHere) return remoteStarts.follow(agentId, executionId, waiter, false, refusal);
    const settings = this.host.coordinator.settings;
    const observed = this.observer(executionId, agentId);
    observed.executionId.then(
      (id) => waiter.knowExecutionId(id),
      () => undefined,
    );
    observed.result.then(
      (result) => {
        if (result.outcome === "completed") emitToWaiter(waiter, { type: "done", executionId, output: result.output, usage: result.usage }, settings);
        else if (result.handoff) emitToWaiter(waiter, { type: "handoff", executionId, handoff: result.handoff }, settings);
        // Under the callback-error policy, as a live Run (decision 0056).
        resolveWaiter(waiter, result, outcomeEventOf(result), settings);
      },
      (error: unknown) => settleWaiterWithError(waiter, asPhronomyError(error, "INTERNAL"), settings),
    );
  }

  /** A caller waiting here on an execution (or a message queued under its
   * id) that another process runs now: followed until it ends. */
  followElsewhere(agentId: string, executionId: string, waiter: Waiting): void {
    this.follower().follow(executionId, agentId, waiter);
  }

  /** An execution of the conversation suspended here: when the suspension
   * landed after the lease was lost here (before anyone took it), whoever
   * takes it decides it, and its callers here follow it
   * (docs/decisions/0063). The inbox claims its decisions while the core
   * keeps it open (`ConversationFlag.InboxOpen`). */
  suspended(agentId: string): void {
    const leasing = leasingStoreOf(this.host.store);
    if (leasing !== undefined && leasing.heldEpochOf(agentId) === undefined) this.leasesLost([agentId]);
  }

  /** The store says this process lost the conversations' leases: the
   * core is told, and the callers it names (`FollowQueued`,
   * `FollowAdmitted`) follow their executions to wherever they run next
   * (lost-leases.ts). */
  leasesLost(agentIds: readonly string[]): void {
    if (this.host.closed()) return;
    const host = {
      agentEntries: (lost: ReadonlySet<string>) => {
        for (const agentId of lost) this.host.coordinator.agentNamed?.(agentId);
        return this.host.coordinator.agentEntries();
      },
      leaseLost: (agent: AgentEntry) => this.host.queues.leaseLost(agent),
    };
    this.host.loop.post(() => reportLostConversations(host, agentIds), {
      label: `the report of conversations whose lease moved away (${agentIds.join(", ")})`,
    });
  }

  async close(): Promise<void> {
    await this.durableWatches?.close();
  }

  /** The one follower of executions run elsewhere (durable-watch.ts). */
  private follower(): DurableWatches {
    this.durableWatches ??= new DurableWatches(this.host.store, this.host.coordinator.settings);
    return this.durableWatches;
  }
}
