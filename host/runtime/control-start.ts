// The first half of `Phronomy.open`: the options checked, the core
// started, the store opened (created and migrated) or checked, and the
// control loop and the coordinator made on them. environment.ts wires the
// rest onto these.

import { ControlCore } from "../core/control-core.js";
import type { PhronomyError } from "../errors.js";
import { checkCapabilities } from "../store/capabilities.js";
import type { ExecutionStore } from "../store/store.js";
import { ControlLoop } from "./control-loop.js";
import { Coordinator } from "./coordinator.js";
import { checkOpenOptions, openStoreAt, type OpenOptions } from "./open-options.js";
import type { Logger } from "./options.js";
import type { RetentionOptions } from "./retention.js";
import { checkSupportedRuntime } from "./supported-runtime.js";
import { Tracer } from "./tracing.js";

/** What an environment is wired on. */
export interface StartedControl {
  readonly logger: Logger;
  readonly retention: RetentionOptions;
  readonly core: ControlCore;
  readonly store: ExecutionStore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  /** Sets what happens once the core failed (every later message is refused). */
  onCoreFailed(handler: (error: PhronomyError) => void): void;
}

export async function startControl(options: OpenOptions): Promise<StartedControl> {
  checkSupportedRuntime();
  const { logger, retention } = checkOpenOptions(options);
  const core = await ControlCore.create(options.limits ?? {});
  const store = typeof options.store === "string" ? await openStoreAt(options.store, options, logger) : options.store;
  if (typeof options.store !== "string") checkCapabilities(store);
  let coreFailed: (error: PhronomyError) => void = () => undefined;
  const loop = new ControlLoop(
    (error) => logger.warn(`[phronomy] a control message failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`),
    (error) => coreFailed(error),
  );
  const callbackErrorPolicy = options.callbackErrorPolicy ?? "report";
  const coordinator = new Coordinator({ core, loop, store, logger, callbackErrorPolicy, tracer: new Tracer(), now: () => Date.now() });
  const onCoreFailed = (handler: (error: PhronomyError) => void): void => {
    coreFailed = handler;
  };
  return { logger, retention, core, store, loop, coordinator, onCoreFailed };
}
