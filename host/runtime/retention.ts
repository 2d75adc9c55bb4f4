// Retention (issue 12 item 4, docs/decisions/0027): how long a finished
// execution stays in the store, per environment and per agent, the
// background pruner that applies it, and `env.prune()`.
//
// Rules kept here:
// * The policy is the environment's: `Phronomy.open({ retention })` sets
//   the default, `env.agent({ retention })` an agent's own. A pass prunes
//   each agent with its own retention by itself, then every other agent
//   with the default (`exceptAgentIds`). Another process sharing the store
//   applies its own policy to the agents it does not define.
// * The store does the deleting, in batches that start at the store's
//   `pruneBatchExecutions` executions (32 on SQLite, whose one writer the
//   hot path shares; 100 on PostgreSQL) and double after every full one,
//   up to `pruneBatchExecutionsMax` (a backlog: docs/decisions/0059), one
//   transaction each (`store/prune.ts`); between two batches the pruner
//   yields to the event loop, so the hot path's work is never queued
//   behind a whole pass.
// * One pass at a time: a background pass and `env.prune()` calls run one
//   after the other. The timer is unref'd (a process is never kept alive
//   by it), and `close()` waits for the pass in progress to end its batch.
// * A failed batch is reported to the logger (once per distinct reason)
//   and tried again next pass.

import { InvalidInputError } from "../errors.js";
import {
  addPruneCounts,
  journalRecordsKept,
  noPruneCounts,
  pruneBatchExecutionsMax,
  pruneExceptionsMax,
  type PruneCounts,
  type PruneExecutionsOperation,
  type PruningStore,
} from "../store/prune.js";
import { checkId } from "../store/check-id.js";
/** The environment's logger (`options.ts` Logger: not imported, which would close a circle). */
interface Logger {
  warn(message: string): void;
}

/** How long finished executions stay (`Phronomy.open({ retention })`). */
export interface RetentionOptions {
  /** How long a finished (terminal) execution stays in the store after it
   * finished, in milliseconds (at least `RETENTION_FINISHED_MS_MIN`), or
   * `"forever"`. Default `RETENTION_FINISHED_MS_DEFAULT` (7 days). */
  readonly finishedMs?: number | "forever";
  /** Environment only: how often the background pruner looks (default: a
   * quarter of the shortest retention, from 250 ms to one minute). */
  readonly intervalMs?: number;
  /** Environment only: journal records each conversation keeps whatever is
   * pruned (default and maximum 1,000, the largest `memoryWindow`); every
   * agent defined here must have a memory window that fits. */
  readonly journalRecordsKept?: number;
}

/** An agent's own retention (`env.agent({ retention })`). */
export interface AgentRetentionOptions {
  /** How long this agent's finished executions stay, in ms, or `"forever"`. */
  readonly finishedMs: number | "forever";
}

/** What `env.prune()` deletes: terminal executions that finished more than
 * `olderThanMs` ago (default: each agent's retention), of `agentId` only
 * (default: every agent). */
export interface PruneOptions {
  /** Finished this many ms ago or longer (0: every finished one; each agent's retention otherwise). */
  readonly olderThanMs?: number;
  /** Only this agent's (conversation's) executions. */
  readonly agentId?: string;
}

/** What a prune removed: executions, and the rows that went with them
 * (steps, journal records past the kept window, approval inbox rows). */
export type PruneReport = PruneCounts;

/** Seven days: a person must be able to look at what an agent did after a
 * weekend (Temporal's CLI creates a namespace with 72 h, which a long
 * weekend outlasts) and at last week's review, while a store that is never
 * cleaned grows ≈3.5 MB/s under full load (issue 12). An application that
 * must keep more (audit) or less (privacy) says so. */
export const RETENTION_FINISHED_MS_DEFAULT = 7 * 24 * 60 * 60 * 1000;
/** A retention under a second is a unit mistake (`finishedMs: 7` meant
 * days?) and would delete executions while observers still read them. */
export const RETENTION_FINISHED_MS_MIN = 1_000;
/** Ten years: far above any policy, and the cutoff stays a valid time. */
export const RETENTION_FINISHED_MS_MAX = 10 * 365 * 24 * 60 * 60 * 1000;
export const PRUNE_INTERVAL_MS_MIN = 10;
export const PRUNE_INTERVAL_MS_MAX = 60 * 60 * 1000;
const intervalFloorMs = 250;
const intervalCeilingMs = 60_000;

const RETENTION_KEYS = ["finishedMs", "intervalMs", "journalRecordsKept"] as const;
const AGENT_RETENTION_KEYS = ["finishedMs"] as const;
const PRUNE_OPTION_KEYS = ["olderThanMs", "agentId"] as const;

/** Checks `Phronomy.open({ retention })`. */
export function checkRetentionOptions(value: unknown, what = "Phronomy.open(options)"): RetentionOptions {
  if (value === undefined) return {};
  checkObject(value, `${what}: "retention"`, RETENTION_KEYS);
  const given = value as RetentionOptions;
  checkFinishedMs(given.finishedMs, `${what}: "retention.finishedMs"`);
  const interval = given.intervalMs;
  if (
    interval !== undefined
    && (typeof interval !== "number" || !Number.isInteger(interval) || interval < PRUNE_INTERVAL_MS_MIN || interval > PRUNE_INTERVAL_MS_MAX)
  ) {
    throw new InvalidInputError(
      `${what}: "retention.intervalMs" must be an integer from ${PRUNE_INTERVAL_MS_MIN} to ${PRUNE_INTERVAL_MS_MAX} (milliseconds), got ${String(interval)}`,
    );
  }
  const kept = given.journalRecordsKept;
  if (kept !== undefined && (typeof kept !== "number" || !Number.isInteger(kept) || kept < 1 || kept > journalRecordsKept)) {
    throw new InvalidInputError(`${what}: "retention.journalRecordsKept" must be an integer from 1 to ${journalRecordsKept}, got ${String(kept)}`);
  }
  return given;
}

/** Checks `env.agent({ retention })`. */
export function checkAgentRetention(value: unknown, what: string): void {
  if (value === undefined) return;
  checkObject(value, `${what}: "retention"`, AGENT_RETENTION_KEYS);
  const finishedMs = (value as Partial<AgentRetentionOptions>).finishedMs;
  if (finishedMs === undefined) throw new InvalidInputError(`${what}: "retention.finishedMs" is required (milliseconds, or "forever")`);
  checkFinishedMs(finishedMs, `${what}: "retention.finishedMs"`);
}

function checkObject(value: unknown, what: string, keys: readonly string[]): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidInputError(`${what} must be an object { ${keys.join(", ")} }, got ${JSON.stringify(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) throw new InvalidInputError(`${what}: unknown option "${key}"; allowed: ${keys.join(", ")}`);
  }
}

function checkFinishedMs(value: unknown, what: string): void {
  if (value === undefined || value === "forever") return;
  if (typeof value !== "number" || !Number.isInteger(value) || value < RETENTION_FINISHED_MS_MIN || value > RETENTION_FINISHED_MS_MAX) {
    const hint =
      typeof value === "number" && value > 0 && value < RETENTION_FINISHED_MS_MIN ? ` (it is in milliseconds: 7 days is ${RETENTION_FINISHED_MS_DEFAULT})` : "";
    throw new InvalidInputError(
      `${what} must be "forever" or an integer number of milliseconds from ${RETENTION_FINISHED_MS_MIN} to ${RETENTION_FINISHED_MS_MAX}, got ${JSON.stringify(value)}${hint}`,
    );
  }
}

export function checkPruneOptions(value: unknown): PruneOptions {
  if (value === undefined) return {};
  checkObject(value, "env.prune(options)", PRUNE_OPTION_KEYS);
  const { olderThanMs, agentId } = value as PruneOptions;
  if (
    olderThanMs !== undefined
    && (typeof olderThanMs !== "number" || !Number.isInteger(olderThanMs) || olderThanMs < 0 || olderThanMs > RETENTION_FINISHED_MS_MAX)
  ) {
    throw new InvalidInputError(
      `env.prune(options): "olderThanMs" must be an integer number of milliseconds from 0 to ${RETENTION_FINISHED_MS_MAX}, got ${JSON.stringify(olderThanMs)}`,
    );
  }
  if (agentId !== undefined) checkId(agentId, "env.prune(options): agentId");
  return value as PruneOptions;
}

export interface RetentionSettings {
  readonly store: PruningStore;
  readonly options: RetentionOptions;
  readonly logger: Logger;
  readonly now: () => number;
}

/** One environment's retention: its policy, its background pruner. */
export class Retention {
  private readonly defaultMs: number | "forever";
  /** Agents defined here with a retention of their own. */
  private readonly agentMs = new Map<string, number | "forever">();
  private timer: NodeJS.Timeout | undefined;
  /** The pass or prune in progress (they run one at a time). */
  private running: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The last failure reported: the same one again is not repeated every pass. */
  private lastFailure: string | undefined;

  constructor(private readonly settings: RetentionSettings) {
    this.defaultMs = settings.options.finishedMs ?? RETENTION_FINISHED_MS_DEFAULT;
  }

  /** Starts the background pruner (its first pass one interval from now). */
  start(): void {
    this.schedule();
  }

  /** Records an agent's own retention (undefined: the environment's).
   * Refused when its memory window is more than the journal keeps, and past
   * `pruneExceptionsMax` agents with a retention of their own. */
  defineAgent(agentId: string, retention: AgentRetentionOptions | undefined, memoryWindow: number): void {
    this.checkMemoryWindow(`agent "${agentId}"`, memoryWindow, { agentId });
    if (retention === undefined) return;
    if (!this.agentMs.has(agentId) && this.agentMs.size >= pruneExceptionsMax) {
      throw new InvalidInputError(
        `agent "${agentId}": at most ${pruneExceptionsMax} agents of one environment may have a retention of their own; set the environment's (Phronomy.open({ retention })) instead`,
        { agentId },
      );
    }
    this.agentMs.set(agentId, retention.finishedMs);
  }

  /** A named definition (docs/decisions/0024): its conversations are
   * pruned with the environment's retention. A retention of its own is
   * refused: pruning selects by agent id, and a definition's conversation
   * ids are not known ahead (nor stored apart from each row's config). */
  defineConversations(name: string, retention: AgentRetentionOptions | undefined, memoryWindow: number): void {
    const what = `the definition named "${name}"`;
    this.checkMemoryWindow(what, memoryWindow, {});
    if (retention !== undefined) {
      throw new InvalidInputError(
        `${what}: "retention" applies to an agent defined by its id; the conversations of a named definition keep the environment's retention (Phronomy.open({ retention })), or env.prune({ agentId }) prunes one conversation on demand`,
      );
    }
  }

  private checkMemoryWindow(what: string, memoryWindow: number, context: { readonly agentId?: string }): void {
    const kept = this.settings.options.journalRecordsKept ?? journalRecordsKept;
    if (memoryWindow > kept) {
      throw new InvalidInputError(
        `${what}: its memoryWindow (${memoryWindow}) is more than the ${kept} journal records the environment keeps per conversation (retention.journalRecordsKept); lower the window or keep more`,
        context,
      );
    }
  }

  /** `env.prune(options)`: runs after the pass in progress. */
  prune(options: PruneOptions): Promise<PruneReport> {
    const now = this.settings.now();
    return this.serialized(() => {
      if (options.olderThanMs !== undefined) {
        // Finished `olderThanMs` ago or longer: `olderThanMs: 0` takes an
        // execution that finished in this very millisecond too (the store
        // deletes those finished strictly before `finishedBefore`).
        const finishedBefore = now - options.olderThanMs + 1;
        return this.drain({ finishedBefore, ...(options.agentId !== undefined ? { agentId: options.agentId } : {}) });
      }
      return options.agentId !== undefined ? this.pruneAgent(options.agentId, now) : this.pass(now);
    });
  }

  /** Stops the timer and waits for the batch in progress. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.running.catch(() => undefined);
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.serialized(() => this.pass(this.settings.now()))
        .then(
          () => {
            this.lastFailure = undefined;
          },
          (error: unknown) => {
            const message = error instanceof Error ? error.message : String(error);
            if (message !== this.lastFailure && !this.closed)
              this.settings.logger.warn(
                `[phronomy] pruning finished executions failed (tried again every ${this.intervalMs()} ms; reported again only if the reason changes): ${message}`,
              );
            this.lastFailure = message;
          },
        )
        .finally(() => this.schedule());
    }, this.intervalMs());
    this.timer.unref();
  }

  /** A quarter of the shortest retention, from 250 ms to one minute: an
   * execution outlives its retention by at most about a quarter of it. */
  intervalMs(): number {
    if (this.settings.options.intervalMs !== undefined) return this.settings.options.intervalMs;
    let shortest = this.defaultMs === "forever" ? Infinity : this.defaultMs;
    for (const ms of this.agentMs.values()) if (ms !== "forever") shortest = Math.min(shortest, ms);
    return Math.min(intervalCeilingMs, Math.max(intervalFloorMs, Math.floor(shortest / 4)));
  }

  private serialized(body: () => Promise<PruneReport>): Promise<PruneReport> {
    const result = this.running.catch(() => undefined).then(body);
    this.running = result.catch(() => undefined);
    return result;
  }

  /** Each agent with its own retention, then the rest with the default. */
  private async pass(now: number): Promise<PruneReport> {
    let total = noPruneCounts;
    for (const agentId of [...this.agentMs.keys()]) total = addPruneCounts(total, await this.pruneAgent(agentId, now));
    if (this.defaultMs === "forever") return total;
    const except = [...this.agentMs.keys()];
    return addPruneCounts(total, await this.drain({ finishedBefore: now - this.defaultMs, ...(except.length > 0 ? { exceptAgentIds: except } : {}) }));
  }

  private pruneAgent(agentId: string, now: number): Promise<PruneReport> {
    const retention = this.agentMs.get(agentId) ?? this.defaultMs;
    if (retention === "forever") return Promise.resolve(noPruneCounts);
    return this.drain({ finishedBefore: now - retention, agentId });
  }

  /** Batches until one finds fewer than a batch of executions and of
   * inbox rows (or the environment closes), yielding to the event loop
   * between two. A full batch says a backlog at least as large is left:
   * the next one is twice as large, up to `pruneBatchExecutionsMax`
   * (`nextBatch`). */
  private async drain(request: Omit<PruneExecutionsOperation, "type" | "executionsMax">): Promise<PruneReport> {
    let total = noPruneCounts;
    let batch = this.settings.store.pruneBatchExecutions;
    for (;;) {
      const kept = this.settings.options.journalRecordsKept;
      const counts = await this.settings.store.pruneExecutions({
        type: "pruneExecutions",
        ...request,
        executionsMax: batch,
        ...(kept !== undefined ? { journalRecordsKept: kept } : {}),
      });
      total = addPruneCounts(total, counts);
      // Inbox rows go with executions, and refused filed starts on their own
      // (a batch at most per request): a full batch of either asks for more.
      if ((counts.executions < batch && counts.approvals < batch) || this.closed) return total;
      batch = nextBatch(batch);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

/** The batch after a full one (docs/decisions/0059). Each batch waits for
 * its turn at the store (on SQLite a group commit behind the hot path's
 * barriers), so a fixed batch caps pruning at one batch per wait whatever
 * the store could delete: 32 per ≈125 ms ≈ 255 executions/s while 850
 * finished each second (issue 24 item 12). Doubling while batches come
 * back full makes a pass remove its backlog in a few waits; the store's
 * own batch stays the size of a pass with little to do. */
function nextBatch(batch: number): number {
  return Math.min(pruneBatchExecutionsMax, batch * 2);
}
