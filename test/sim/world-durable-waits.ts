// The waits of the simulated world that no person answers (issue 28 item
// 6; docs/decisions/0086): timers (decision 0076), keyed event waits and
// `env.signal` (0077), and child agents (0079). The world's agent can call
// `wait` (a timer), `awaitPayment` (an event wait keyed `pay:<order>`, timed
// out after `eventTimeoutMs`) and `ask` (the `helper` agent as a child).
//
// Every wait the store ever commits is recorded by a temporary trigger on
// the shared database (`sim_waits`), so what answered it can be judged
// against what it was however quickly it went by. Invariants kept here:
// * a timer is answered by the clock only, never before its due time
//   unless the world fired it by hand (`fire: true`);
// * an event wait is answered by a signal sent with its key (a payload the
//   world sent for that key), or by its timeout, never before it is due
//   unless fired by hand;
// * a child wait is answered by its child's end only, and once quiet, by
//   the outcome the child's row ended with;
// * a signal told `resumed` committed its payload to that wait; a signal
//   told `stored` answered a wait with its key or is still kept.
// "Exactly once" (one `approval_decided` per wait) is world-waits.ts's check.

import { z } from "zod";
import { timer, waitForEvent } from "../../host/index.js";
import type { SqliteConnection } from "../../host/store/sqlite/driver.js";

/** An event wait's timeout. */
export const eventTimeoutMs = 3_000;
/** Orders an event wait (and a signal) names: few, so keys meet. */
const orders = 3;

/** The timer every simulated agent can set. */
export function waitTool() {
  return timer({ description: "Waits a while", inputSchema: z.object({ ms: z.number().int().min(0) }), until: ({ ms }) => ms });
}

/** The event wait every simulated agent can ask. */
export function paymentTool() {
  return waitForEvent({
    description: "Waits for a payment",
    inputSchema: z.object({ order: z.string() }),
    key: ({ order }) => `pay:${order}`,
    payloadSchema: z.object({ paid: z.string() }),
    timeoutMs: eventTimeoutMs,
  });
}

/** A signal the world sent, and what it was told. */
export interface SentSignal {
  readonly label: string;
  readonly key: string;
  readonly token: string;
  result: string | undefined;
  executionId?: string;
  waitId?: string;
}

interface RecordedWait {
  readonly kind?: string;
  readonly dueAt?: number;
  readonly key?: string;
  readonly child?: { readonly executionId?: string };
}

interface DecidedAction {
  readonly kind?: string;
  readonly value?: {
    readonly firedAt?: number;
    readonly timedOut?: boolean;
    readonly waitedMs?: number;
    readonly paid?: string;
    readonly executionId?: string;
    readonly outcome?: string;
  };
}

type Random = () => number;

export class DurableWaits {
  /** Waits the world fired by hand (they may fire before their due time). */
  readonly handFired = new Set<string>();
  readonly signals: SentSignal[] = [];
  private readonly lastPayload = new Map<string, string>();
  private readonly keyOfToken = new Map<string, string>();
  private tokens = 0;

  constructor(
    private readonly random: Random,
    private readonly connection: SqliteConnection,
  ) {
    // A record of every wait committed, kept by the database itself.
    connection.exec(`
      CREATE TEMP TABLE IF NOT EXISTS sim_waits (execution_id TEXT NOT NULL, approval_id TEXT NOT NULL, request TEXT NOT NULL, PRIMARY KEY (execution_id, approval_id));
      CREATE TEMP TRIGGER IF NOT EXISTS sim_waits_updated AFTER UPDATE ON main.executions
        WHEN NEW.status = 'suspended' AND json_extract(NEW.approval_request, '$.approvalId') IS NOT NULL
        BEGIN INSERT OR IGNORE INTO sim_waits VALUES (NEW.execution_id, json_extract(NEW.approval_request, '$.approvalId'), NEW.approval_request); END;
      CREATE TEMP TRIGGER IF NOT EXISTS sim_waits_inserted AFTER INSERT ON main.executions
        WHEN NEW.status = 'suspended' AND json_extract(NEW.approval_request, '$.approvalId') IS NOT NULL
        BEGIN INSERT OR IGNORE INTO sim_waits VALUES (NEW.execution_id, json_extract(NEW.approval_request, '$.approvalId'), NEW.approval_request); END;
      DELETE FROM sim_waits;
    `);
  }

  /** An order for an event wait or a signal. */
  order(): string {
    return `o${Math.floor(this.random() * orders)}`;
  }

  /** A signal's key and payload: now and then the payload sent last for the key. */
  drawSignal(order = this.order()): { key: string; token: string } {
    const key = `pay:${order}`;
    const last = this.lastPayload.get(key);
    const token = last !== undefined && this.random() < 0.3 ? last : `#s${(this.tokens += 1)}`;
    this.lastPayload.set(key, token);
    this.keyOfToken.set(token, key);
    return { key, token };
  }

  /** Judges what answered each wait committed so far. */
  checkDecided(): string[] {
    const problems: string[] = [];
    for (const row of this.connection
      .prepare(
        "SELECT executions.execution_id, json_extract(d.payload, '$.approvalId') AS approval_id, json_extract(d.payload, '$.action') AS action, w.request FROM steps d JOIN executions ON executions.rowid = d.execution_rowid JOIN sim_waits w ON w.execution_id = executions.execution_id AND w.approval_id = json_extract(d.payload, '$.approvalId') WHERE d.kind = 'approval_decided'",
      )
      .all()) {
      const wait = JSON.parse(String(row["request"])) as RecordedWait;
      const action = (row["action"] === null ? {} : JSON.parse(String(row["action"]))) as DecidedAction;
      const problem = this.judge(wait, action, String(row["approval_id"]));
      if (problem !== undefined) problems.push(`wait ${String(row["approval_id"])} of ${String(row["execution_id"])} (${wait.kind}): ${problem}`);
    }
    return problems;
  }

  private judge(wait: RecordedWait, action: DecidedAction, approvalId: string): string | undefined {
    const byHand = this.handFired.has(approvalId);
    if (wait.kind === "timer") {
      if (action.kind !== "fire") return `a timer answered by ${action.kind ?? "a plain decision"}`;
      if (!byHand && (action.value?.firedAt ?? 0) < (wait.dueAt ?? 0))
        return `fired at ${action.value?.firedAt}, before its due time ${wait.dueAt}, and not by hand`;
    }
    if (wait.kind === "event") {
      if (action.kind === "signal") {
        const key = this.keyOfToken.get(action.value?.paid ?? "");
        if (key !== wait.key) return `answered by a payload ${JSON.stringify(action.value)} no signal with its key ${wait.key} sent (sent for ${key})`;
      } else if (action.kind !== "fire") return `an event wait answered by ${action.kind ?? "a plain decision"}`;
      else if (!byHand && (action.value?.waitedMs ?? 0) < eventTimeoutMs)
        return `timed out after ${action.value?.waitedMs} ms, before its timeout, and not by hand`;
    }
    if (wait.kind === "child" && action.kind !== "child") return `a child wait answered by ${action.kind ?? "a plain decision"}`;
    if (wait.kind !== "child" && action.kind === "child") return "answered by a child's end";
    return undefined;
  }

  /** Once quiet: each child wait answered by its child's final outcome,
   * and each signal kept either taken by a wait with its key or still kept. */
  checkQuiet(): string[] {
    const problems: string[] = [];
    for (const row of this.connection
      .prepare(
        "SELECT executions.execution_id, json_extract(d.payload, '$.action.value') AS value FROM steps d JOIN executions ON executions.rowid = d.execution_rowid WHERE d.kind = 'approval_decided' AND json_extract(d.payload, '$.action.kind') = 'child'",
      )
      .all()) {
      const value = JSON.parse(String(row["value"])) as { executionId?: string; outcome?: string };
      const child = this.connection.prepare("SELECT status, outcome FROM executions WHERE execution_id = ?").get(value.executionId ?? "");
      if (child === undefined ? value.outcome !== "failed" : child["status"] !== "terminal" || child["outcome"] !== value.outcome) {
        problems.push(
          `parent ${String(row["execution_id"])} resumed with child ${value.executionId} ${value.outcome}, but the child's row is ${child === undefined ? "absent" : `${String(child["status"])}/${String(child["outcome"])}`}`,
        );
      }
    }
    for (const signal of this.signals.filter((sent) => sent.result === "signal:stored")) {
      const taken = this.connection
        .prepare(
          "SELECT 1 FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE kind = 'approval_decided' AND json_extract(payload, '$.action.kind') = 'signal' AND json_extract(payload, '$.action.value.paid') = ?",
        )
        .get(signal.token);
      const kept = this.connection
        .prepare("SELECT 1 FROM event_signals WHERE signal_key = ? AND instr(payload, ?) > 0")
        .get(signal.key, JSON.stringify(signal.token));
      if (taken === undefined && kept === undefined) problems.push(`${signal.label} was stored, then neither taken by a wait nor kept`);
    }
    return problems;
  }

  /** A signal told `resumed`: its payload is what that wait committed. */
  checkResumed(signal: SentSignal): string | undefined {
    const row = this.connection
      .prepare(
        "SELECT json_extract(payload, '$.action.kind') AS kind, json_extract(payload, '$.action.value.paid') AS paid FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE execution_id = ? AND kind = 'approval_decided' AND json_extract(payload, '$.approvalId') = ?",
      )
      .get(signal.executionId ?? "", signal.waitId ?? "");
    if (row === undefined) return `${signal.label} was told resumed, yet wait ${signal.waitId} of ${signal.executionId} has no answer committed`;
    if (row["kind"] !== "signal" || row["paid"] !== signal.token)
      return `${signal.label} was told resumed, yet wait ${signal.waitId} of ${signal.executionId} committed ${String(row["kind"])} ${String(row["paid"])}`;
    return undefined;
  }
}

/** The answers committed to waits of these kinds, by what answered them: the run's counts print them. */
export function durableAnswers(connection: SqliteConnection): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of connection
    .prepare(
      "SELECT json_extract(w.request, '$.kind') || ':' || coalesce(json_extract(d.payload, '$.action.kind'), 'plain') || CASE WHEN json_extract(d.payload, '$.action.value.timedOut') THEN '(timed out)' ELSE '' END AS kind, count(*) AS n FROM steps d JOIN executions ON executions.rowid = d.execution_rowid JOIN sim_waits w ON w.execution_id = executions.execution_id AND w.approval_id = json_extract(d.payload, '$.approvalId') WHERE d.kind = 'approval_decided' AND json_extract(w.request, '$.kind') IN ('timer', 'event', 'child') GROUP BY 1",
    )
    .all()) {
    counts[String(row["kind"])] = Number(row["n"]);
  }
  return counts;
}
