// `env.close()` (SPEC §4.2): new starts are refused with
// RuntimeShutdownError, work in flight runs to its terminal outcome,
// executions suspended for approval stay durable (their local waiters are
// told the environment closed), then the services stop and the store
// closes. A second `close()` returns the same promise.

import { MessageKind as M } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { RuntimeShutdownError } from "../errors.js";
import type { ExecutionStore } from "../store/store.js";
import type { ControlLoop } from "./control-loop.js";
import type { ConversationQueues } from "./conversation-queue.js";
import type { Coordinator } from "./coordinator.js";

/** What the drain asks of its environment (environment.ts wires it). */
export interface DrainHost {
  readonly store: ExecutionStore;
  readonly core: ControlCore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  readonly queues: Pick<ConversationQueues, "close">;
  /** What stops once drained, in this order, before the loop and the store. */
  readonly services: readonly { close(): Promise<void> }[];
}

export class Drain {
  private closing: Promise<void> | undefined;
  private drainWaiters: (() => void)[] = [];

  constructor(private readonly host: DrainHost) {}

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** The same promise for every call. */
  close(): Promise<void> {
    this.closing ??= this.drainAndClose();
    return this.closing;
  }

  /** Refuses new work once `close()` was called. */
  assertOpen(what: string): void {
    if (this.closing) throw new RuntimeShutdownError(what);
  }

  /** The coordinator went idle (or the core failed): a drain waiting for it ends. */
  checkDrained(): void {
    if (this.drainWaiters.length === 0 || !this.host.coordinator.drained) return;
    for (const resolve of this.drainWaiters.splice(0)) resolve();
  }

  private async drainAndClose(): Promise<void> {
    const { loop, core, coordinator } = this.host;
    loop.beginDraining(() => this.checkDrained());
    loop.post(() => core.apply(M.SetDraining, 1));
    await new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      // Refused only after the core failed: nothing live is left to drain.
      if (!loop.post(() => this.checkDrained())) resolve();
    });
    coordinator.releaseSuspendedWaiters();
    this.host.queues.close();
    for (const service of this.host.services) await service.close();
    loop.close();
    await this.host.store.close();
  }
}
