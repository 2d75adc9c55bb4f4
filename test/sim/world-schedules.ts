// Scheduled starts in the simulated world (issue 28 items 3 and 6;
// docs/decisions/0078, 0097): the world makes schedules (at a time, or on
// a cron schedule), cancels them and runs them now at any process, while
// processes die, connections drop and schedule writes fail or end with an
// outcome unknown; every process defines the agent, so every sweep fires.
//
// Every claim and every settlement the store commits is recorded by
// temporary triggers on the shared database (`sim_schedule_claims`,
// `sim_schedule_firings`). Invariants kept here:
// * after every step: a slot of a schedule is settled at most once, no slot
//   is claimed that is not after the last one settled (slots only grow,
//   decision 0098), and a firing settled as started or queued names the
//   execution its key fixes (`schedule:<id>:<slot>`);
// * once quiet: every slot claimed is settled (unless its schedule was
//   cancelled meanwhile), a started firing's execution exists, a refused
//   one started none, no active schedule has been due for longer than a
//   sweep takes to see it (a minute) plus a firing's retry time.

import { firingRetryMs, sweepIdleMsMax } from "../../host/runtime/schedule-sweep.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";
import type { SqliteConnection } from "../../host/store/sqlite/driver.js";

/** Cron expressions the world draws: every minute, every other minute. */
const crons = ["* * * * *", "*/2 * * * *"] as const;
/** The latest a one-shot schedule is drawn ahead of now. */
const aheadMsMax = 5_000;

type Random = () => number;

/** A schedule the world made, for the draws that pick one. */
export interface MadeSchedule {
  readonly scheduleId: string;
  readonly agentId: string;
}

export class WorldSchedules {
  readonly made: MadeSchedule[] = [];
  private reported = new Set<string>();

  constructor(
    private readonly random: Random,
    private readonly connection: SqliteConnection,
  ) {
    connection.exec(`
      CREATE TEMP TABLE IF NOT EXISTS sim_schedule_claims (schedule_id TEXT NOT NULL, slot INTEGER NOT NULL, last_slot INTEGER);
      CREATE TEMP TABLE IF NOT EXISTS sim_schedule_firings (schedule_id TEXT NOT NULL, agent_id TEXT NOT NULL, slot INTEGER NOT NULL, execution_id TEXT, outcome TEXT NOT NULL, error TEXT);
      CREATE TEMP TRIGGER IF NOT EXISTS sim_schedule_claimed AFTER UPDATE ON main.schedules
        WHEN NEW.firing_slot_at IS NOT NULL AND NEW.revision > OLD.revision AND NEW.firings = OLD.firings AND NEW.state = 'active'
        BEGIN INSERT INTO sim_schedule_claims VALUES (NEW.schedule_id, NEW.firing_slot_at, OLD.last_slot_at); END;
      CREATE TEMP TRIGGER IF NOT EXISTS sim_schedule_settled AFTER UPDATE ON main.schedules
        WHEN NEW.firings > OLD.firings
        BEGIN INSERT INTO sim_schedule_firings VALUES (NEW.schedule_id, NEW.agent_id, NEW.last_slot_at, NEW.last_execution_id, NEW.last_outcome, NEW.last_error); END;
      DELETE FROM sim_schedule_claims;
      DELETE FROM sim_schedule_firings;
    `);
  }

  /** When a new schedule fires: at a time (now, or up to five seconds on), or a cron. */
  drawTiming(): { at: number } | { cron: string } {
    if (this.random() < 0.5) return { cron: crons[Math.floor(this.random() * crons.length)]! };
    return { at: Date.now() + Math.floor(this.random() * aheadMsMax) };
  }

  /** How long a run now waits for another process's firing. */
  drawWaitMs(): number {
    return this.random() < 0.5 ? 0 : Math.floor(this.random() * 2_000);
  }

  /** Safety, after every step. */
  checkFirings(): string[] {
    const problems: string[] = [];
    for (const row of this.connection
      .prepare("SELECT schedule_id, slot, count(*) AS n FROM sim_schedule_firings GROUP BY schedule_id, slot HAVING count(*) > 1")
      .all()) {
      problems.push(`schedule ${String(row["schedule_id"])}: slot ${String(row["slot"])} settled ${String(row["n"])} times`);
    }
    for (const row of this.connection.prepare("SELECT schedule_id, slot, last_slot FROM sim_schedule_claims WHERE slot <= last_slot").all()) {
      problems.push(`schedule ${String(row["schedule_id"])}: slot ${String(row["slot"])} claimed after slot ${String(row["last_slot"])} was settled`);
    }
    for (const row of this.connection.prepare("SELECT * FROM sim_schedule_firings WHERE outcome IN ('started', 'queued')").all()) {
      const keyed = startExecutionIdOf(String(row["agent_id"]), `schedule:${String(row["schedule_id"])}:${String(row["slot"])}`);
      if (row["execution_id"] !== keyed)
        problems.push(
          `schedule ${String(row["schedule_id"])}: slot ${String(row["slot"])} settled ${String(row["outcome"])} with execution ${String(row["execution_id"])}, not its key's ${keyed}`,
        );
    }
    return this.fresh(problems);
  }

  /** Liveness, once quiet (`now`: the clock then). */
  checkQuiet(now: number): string[] {
    const problems: string[] = [];
    // A sweep sees a due row within `sweepIdleMsMax`; a firing left pending is due again at its retry time.
    const late = now - sweepIdleMsMax - firingRetryMs;
    for (const row of this.connection
      .prepare(
        "SELECT c.schedule_id, c.slot, s.state FROM sim_schedule_claims c JOIN schedules s ON s.schedule_id = c.schedule_id WHERE s.state <> 'cancelled' AND NOT (s.firing_slot_at = c.slot AND s.due_at > ?) AND NOT EXISTS (SELECT 1 FROM sim_schedule_firings f WHERE f.schedule_id = c.schedule_id AND f.slot = c.slot) GROUP BY c.schedule_id, c.slot",
      )
      .all(late)) {
      problems.push(`schedule ${String(row["schedule_id"])} (${String(row["state"])}): slot ${String(row["slot"])} was claimed and never settled`);
    }
    for (const row of this.connection.prepare("SELECT * FROM sim_schedule_firings").all()) {
      const id = startExecutionIdOf(String(row["agent_id"]), `schedule:${String(row["schedule_id"])}:${String(row["slot"])}`);
      const ran =
        this.connection.prepare("SELECT 1 FROM executions WHERE execution_id = ?").get(id) !== undefined
        || this.connection.prepare("SELECT 1 FROM queued_messages WHERE execution_id = ?").get(id) !== undefined;
      // Filed for the conversation's holder (the start inbox): settled started
      // once filed (docs/decisions/0078); the holder judges the filed start,
      // and the world checks that it is settled once quiet.
      const filed = row["outcome"] === "started" && this.connection.prepare("SELECT 1 FROM sim_start_inbox WHERE execution_id = ?").get(id) !== undefined;
      if (row["outcome"] !== "refused" && !ran && !filed)
        problems.push(`schedule ${String(row["schedule_id"])}: slot ${String(row["slot"])} settled ${String(row["outcome"])}, yet execution ${id} is nowhere`);
      if (row["outcome"] === "refused" && ran)
        problems.push(`schedule ${String(row["schedule_id"])}: slot ${String(row["slot"])} settled refused (${String(row["error"])}), yet execution ${id} ran`);
    }
    for (const row of this.connection.prepare("SELECT schedule_id, due_at, firing_slot_at FROM schedules WHERE state = 'active' AND due_at <= ?").all(late)) {
      problems.push(
        `schedule ${String(row["schedule_id"])} is still ${row["firing_slot_at"] !== null ? `firing slot ${String(row["firing_slot_at"])}` : `due at ${String(row["due_at"])}`} once the world is quiet`,
      );
    }
    return this.fresh(problems);
  }

  /** Whether a schedule still needs a process now: due, or a firing pending. */
  busy(now: number): boolean {
    return this.connection.prepare("SELECT 1 FROM schedules WHERE state = 'active' AND (due_at <= ? OR firing_slot_at IS NOT NULL)").get(now) !== undefined;
  }

  /** Firings settled, by outcome: the run's counts print them. */
  counts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const row of this.connection.prepare("SELECT outcome, count(*) AS n FROM sim_schedule_firings GROUP BY outcome").all()) {
      counts[`fired:${String(row["outcome"])}`] = Number(row["n"]);
    }
    return counts;
  }

  private fresh(problems: string[]): string[] {
    const fresh = problems.filter((line) => !this.reported.has(line));
    for (const line of fresh) this.reported.add(line);
    return fresh;
  }
}
