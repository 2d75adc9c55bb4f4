// What one PostgreSQL store process knows of the agent leases it asked for
// (docs/decisions/0010), and the background pass that renews them and
// retries the ones it does not hold. The SQL is `leases.ts`; the store
// (`../postgres-store.ts`) asks this book for fences and admissions.
//
// Rules kept here:
// * A process stops admitting for an agent at `admitFraction` of the lease
//   after it *sent* its last successful acquisition or renewal: the
//   server's expiry is at least that late, so admissions stop first.
// * The fence of an agent is the lease held, or the last one held (stale:
//   the database refuses it), or one no lease can match (epoch 0) — never
//   none once the agent was asked for.
// * The background pass runs every third of the lease; `stop` waits for a
//   pass in progress, so no renewal lands after the release.

import type pg from "pg";
import type { PhronomyError } from "../../errors.js";
import * as leases from "./leases.js";
import type { Fence } from "./operations.js";

/** The fence of an agent this process asked for and never held: no lease
 * row has epoch 0 (epochs start at 1), so every write is refused. */
const neverHeldEpoch = 0;

/** What this process knows of one agent's lease. */
interface LeaseState {
  /** The lease held now, or the last one held (its fence, stale, keeps
   * refusing writes once it is lost). */
  grant: leases.LeaseGrant | undefined;
  held: boolean;
  /** An `acquire` is in flight (the background pass leaves the agent alone). */
  acquiring: boolean;
  /** `performance.now()` after which this process stops admitting for the
   * agent unless a renewal succeeded meanwhile. */
  admitUntil: number;
  /** Why it is not held (another owner, a failed renewal). */
  why: string;
  details: Record<string, unknown>;
  /** Set while the runtime recovers the agent after taking it over: its
   * admissions are refused until the recovered executions hold theirs. */
  hold: string | undefined;
}

export interface LeaseBookHooks {
  /** The background pass took over an agent asked for and not held. */
  readonly acquired: (agentId: string, grant: leases.LeaseGrant) => void;
  /** Runs after every background pass (the approval inbox's poll). */
  readonly afterPass: () => Promise<void>;
  /** The store is closing: leases held are still renewed (its last writes
   * need them), none is taken anew. */
  readonly closing: () => boolean;
}

export class LeaseBook {
  private readonly states = new Map<string, LeaseState>();
  private timer: NodeJS.Timeout | undefined;
  /** The background pass running now (`stop` waits for it). */
  private passing: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly pool: pg.Pool,
    /** This process's name in the lease rows. */
    readonly owner: string,
    readonly leaseMs: number,
    private readonly hooks: LeaseBookHooks,
  ) {}

  /** The agents asked for, held or not. */
  agents(): string[] {
    return [...this.states.keys()];
  }

  fenceOf(agentId: string): Fence | undefined {
    const state = this.states.get(agentId);
    if (state === undefined) return undefined;
    return state.grant !== undefined ? { owner: state.grant.owner, epoch: state.grant.epoch } : { owner: this.owner, epoch: neverHeldEpoch };
  }

  /** The lease held on an agent now (and not past its admission time), if any. */
  leaseOf(agentId: string): leases.LeaseGrant | undefined {
    const state = this.states.get(agentId);
    return state?.held === true && performance.now() < state.admitUntil ? state.grant : undefined;
  }

  /** Takes the agent's lease if it is free, expired, or already ours; from
   * now on the agent is fenced, renewed, and retried while not held. */
  async acquire(agentId: string): Promise<leases.LeaseAcquisition> {
    let state = this.states.get(agentId);
    if (state === undefined) {
      state = { grant: undefined, held: false, acquiring: false, admitUntil: 0, why: "its lease is not acquired yet", details: {}, hold: undefined };
      this.states.set(agentId, state);
    }
    this.schedule();
    const sentAt = performance.now();
    state.acquiring = true;
    try {
      const acquisition = await leases.acquire(this.pool, agentId, this.owner, this.leaseMs);
      this.note(state, acquisition, sentAt);
      return acquisition;
    } catch (error) {
      state.why = `acquiring its lease failed (${messageOf(error)})`;
      throw error;
    } finally {
      state.acquiring = false;
    }
  }

  /** Stops renewing and retrying the agent's lease (the caller expires
   * its row): false when it was not asked for or is being acquired. */
  forget(agentId: string): boolean {
    const state = this.states.get(agentId);
    if (state === undefined || state.acquiring) return false;
    this.states.delete(agentId);
    return state.held;
  }

  /** Refuses (`why`) or allows again (undefined) the agent's admissions. */
  holdAdmissions(agentId: string, why: string | undefined): void {
    const state = this.states.get(agentId);
    if (state !== undefined) state.hold = why;
  }

  /** The database's fencing check refused a write at `epoch`: the lease is
   * gone; false when the agent is not under lease here. */
  noteLost(agentId: string, epoch: unknown): boolean {
    const state = this.states.get(agentId);
    if (state === undefined) return false;
    state.held = false;
    state.why = `its lease at epoch ${String(epoch)} was lost (taken over by another process, or expired)`;
    state.details = { epoch };
    return true;
  }

  /** Refuses an admission, before it reaches the database, for an agent
   * under lease that this process does not hold (or could not renew in
   * time, or holds for a takeover's recovery): the refusal, or undefined. */
  admissionRefusal(agentId: string): PhronomyError | undefined {
    const state = this.states.get(agentId);
    if (state === undefined) return undefined;
    if (state.held && state.hold !== undefined) return leases.agentRecovering(agentId, state.hold, { epoch: state.grant?.epoch });
    if (state.held && performance.now() < state.admitUntil) return undefined;
    const why = state.held ? `its lease could not be renewed in time (${state.why})` : state.why;
    return leases.agentOwnedElsewhere(agentId, why, { ...state.details, thisProcess: this.owner });
  }

  /** Stops the background pass (waiting for one in progress) and returns the
   * agents that were held, now marked not held, for the caller to release. */
  async stop(): Promise<string[]> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    // A renewal landing after the release would extend the lease again.
    await this.passing;
    const held = [...this.states].filter(([, state]) => state.held).map(([agentId]) => agentId);
    for (const state of this.states.values()) state.held = false;
    return held;
  }

  private note(state: LeaseState, acquisition: leases.LeaseAcquisition, sentAt: number): void {
    if (acquisition.acquired) {
      state.grant = { owner: acquisition.owner, epoch: acquisition.epoch, expiresAt: acquisition.expiresAt };
      state.held = true;
      state.admitUntil = sentAt + this.leaseMs * leases.admitFraction;
      return;
    }
    state.held = false;
    state.why = acquisition.message;
    state.details = { owner: acquisition.owner, epoch: acquisition.epoch, expiresAt: acquisition.expiresAt };
  }

  private schedule(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setTimeout(() => {
      this.passing = this.pass().finally(() => {
        this.passing = undefined;
        this.timer = undefined;
        this.schedule();
      });
    }, Math.max(1, Math.floor(this.leaseMs / 3)));
    this.timer.unref();
  }

  /** Renews what is held; tries to take what is not. */
  private async pass(): Promise<void> {
    await Promise.all([...this.states].map(async ([agentId, state]) => {
      if (this.stopped || state.acquiring) return;
      const sentAt = performance.now();
      try {
        if (state.held && state.grant !== undefined) {
          const expiresAt = await leases.renew(this.pool, agentId, state.grant, this.leaseMs);
          if (!state.held) return;
          if (expiresAt !== undefined) {
            state.grant = { ...state.grant, expiresAt };
            state.admitUntil = sentAt + this.leaseMs * leases.admitFraction;
            return;
          }
          this.noteLost(agentId, state.grant.epoch);
        }
        if (this.stopped || this.hooks.closing()) return;
        const acquisition = await leases.acquire(this.pool, agentId, this.owner, this.leaseMs);
        if (this.stopped || this.hooks.closing() || state.held) return;
        this.note(state, acquisition, sentAt);
        if (acquisition.acquired) this.hooks.acquired(agentId, { owner: acquisition.owner, epoch: acquisition.epoch, expiresAt: acquisition.expiresAt });
      } catch (error) {
        // The database is unreachable: keep the state; admissions stop at
        // admitUntil, and the next pass tries again.
        state.why = `the lease could not be renewed or acquired: ${messageOf(error)}`;
      }
    }));
    await this.hooks.afterPass();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
