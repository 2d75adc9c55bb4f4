// Where a filed start's time goes (issue 13, docs/decisions/0047): marks
// taken by the filer and by the owner, per execution id, on a clock both
// processes share (`performance.timeOrigin + performance.now()`, the wall
// clock in sub-millisecond steps). Only the bench turns it on
// (`bench/e2e/postgres-child.ts` reports the marks, `postgres.ts` joins
// the processes' marks by execution id and prints each stage's share).
//
// Rules kept here:
// * Off by default: a mark is one boolean test, nothing recorded.
// * Bounded: at most `startTimingMarksMax` executions and
//   `startTimingSamplesMax` samples per name are kept; later ones are
//   dropped (a bench window records far fewer).

/** The moments of a filed start, in the order they happen. */
export type StartStage =
  /** Filer: the filing statement sent. */
  | "filing"
  /** Filer: the filing committed (the Run knows its id). */
  | "filed"
  /** Owner: the notification for its conversation received. */
  | "notified"
  /** Owner: the claim statement that took it sent. */
  | "claiming"
  /** Owner: that claim statement answered. */
  | "claimed"
  /** Owner: admitted (its execution row prepared). */
  | "admitted"
  /** Owner: the claim marked applied. */
  | "settled"
  /** Owner: the run ended (its terminal commit landed). */
  | "ended"
  /** Filer: the outcome read and the Run settled. */
  | "noticed";

/** Executions whose marks are kept: a bench window of a few seconds at a
 * few thousand runs/s; ≈200 bytes each. */
export const startTimingMarksMax = 200_000;

/** Samples kept per name (a duration per poll or claim statement). */
export const startTimingSamplesMax = 100_000;

export type StartMarks = Partial<Record<StartStage, number>>;

class StartTiming {
  enabled = false;
  readonly marks = new Map<string, StartMarks>();
  readonly samples = new Map<string, number[]>();
  /** Run phases by conversation id (`phase`). */
  readonly phases = new Map<string, Partial<Record<RunPhase, number>>>();
  private readonly notifiedAt = new Map<string, number>();

  /** Now, on the clock every process of the machine shares. */
  now(): number {
    return performance.timeOrigin + performance.now();
  }

  mark(executionId: string, stage: StartStage, at = this.now()): void {
    if (!this.enabled) return;
    const marks = this.marks.get(executionId);
    if (marks === undefined) {
      if (this.marks.size < startTimingMarksMax) this.marks.set(executionId, { [stage]: at });
      return;
    }
    marks[stage] ??= at;
  }

  /** A notification for the agent arrived (its payload names the agent,
   * not the execution): claimed starts of the agent take this mark. */
  agentNotified(agentId: string): void {
    if (!this.enabled) return;
    if (!this.notifiedAt.has(agentId) && this.notifiedAt.size >= startTimingMarksMax) return;
    this.notifiedAt.set(agentId, this.now());
  }

  markNotified(executionId: string, agentId: string): void {
    const at = this.notifiedAt.get(agentId);
    if (at !== undefined) this.mark(executionId, "notified", at);
  }

  /** Marks a moment of the conversation's run (the first of each kind kept). */
  phase(agentId: string, phase: RunPhase, at = this.now()): void {
    if (!this.enabled) return;
    const phases = this.phases.get(agentId);
    if (phases === undefined) {
      if (this.phases.size < startTimingMarksMax) this.phases.set(agentId, { [phase]: at });
      return;
    }
    phases[phase] ??= at;
  }

  /** A duration (or count) under a name: a poll's round trip, a claim's size. */
  sample(name: string, value: number): void {
    if (!this.enabled) return;
    const list = this.samples.get(name) ?? [];
    if (list.length >= startTimingSamplesMax) return;
    list.push(value);
    this.samples.set(name, list);
  }
}

/** The moments of a run, by conversation id (bench/e2e's spread: one run
 * per conversation), in the order they happen; docs/decisions/0113. */
export type RunPhase =
  /** The bench: `start` called. */
  | "begun"
  /** Mover: the move statement sent (`home_conversation`). */
  | "moving"
  /** Mover: its answer. */
  | "moved"
  /** The preparation handed to the group commit. */
  | "preparing"
  /** The preparation committed. */
  | "prepared"
  /** The terminal commit handed to the group commit. */
  | "terminating"
  /** The terminal commit committed. */
  | "terminated"
  /** The bench: the Run's result settled. */
  | "ended";

/** The process's one recorder (off unless the bench turns it on). */
export const startTiming = new StartTiming();
