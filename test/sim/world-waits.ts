// The waits the simulated world answers (issue 28, items 5–6; decisions
// 0075 and 0080): a suspended execution waits for an approval or for a
// typed value (`askDate`, a `humanInput()` tool), and the world answers it
// as people do — approved, declined, approved with edited arguments,
// answered in place of the tool, given a value, given a value its schema
// refuses, answered with the other kind — sometimes twice (the same answer
// or another, at the same process or another, which files it for the
// owner), sometimes racing a cancel.
//
// Invariants kept here, over what the store committed:
// * exactly one answer is committed per wait (one `approval_decided` step
//   per execution and approval id);
// * a refused answer changes nothing: a value its schema refuses is never
//   recorded anywhere, and an answer every caller of which was refused
//   (INVALID_INPUT, APPROVAL_MISMATCH) is not the one committed;
// * an answer that must be refused (a bad value, the other kind) never
//   completes its caller.

import { z } from "zod";
import { humanInput, type ResumeDecision } from "../../host/index.js";
import type { SqliteConnection } from "../../host/store/sqlite/driver.js";

/** The typed wait every simulated agent can ask. */
export function askDateTool() {
  return humanInput({
    description: "Asks for a delivery date",
    inputSchema: z.object({ question: z.string() }),
    responseSchema: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}#\d+$/, "a date as YYYY-MM-DD#n") }),
  });
}

/** The pending request of a suspended row, as far as an answer needs it. */
export interface PendingWait {
  readonly approvalId: string;
  readonly kind: "approval" | "input" | "timer" | "event" | "child";
}

const waitKinds = new Set(["input", "timer", "event", "child"]);

/** An answer the world gives, and what it must come to. */
export interface DrawnAnswer {
  readonly decision: ResumeDecision;
  /** For the log. */
  readonly label: string;
  /** The text that marks this answer in the store, if it leaves one. */
  readonly token: string | undefined;
  /** A bad value or the other kind: it must never complete. */
  readonly mustBeRefused: boolean;
}

/** What the answers check needs to know of a caller. */
export interface AnsweringCaller {
  readonly label: string;
  outcome: string | undefined;
  settlements: number;
}

type Random = () => number;

/** Codes that refuse an answer before anything is decided. */
const refusalCodes = new Set(["INVALID_INPUT", "APPROVAL_MISMATCH"]);
/** Marks a value its schema refuses (never to be found in the store). */
const refusedMark = "not-a-date";

export class WaitAnswers {
  private tokens = 0;
  /** Callers of each token (an answer given twice has two). */
  private readonly callersByToken = new Map<string, AnsweringCaller[]>();

  constructor(private readonly random: Random) {}

  /** The wait a suspended row's request is, or undefined. */
  static pendingOf(request: unknown): PendingWait | undefined {
    const { approvalId, kind } = (request ?? {}) as { approvalId?: unknown; kind?: unknown };
    if (typeof approvalId !== "string") return undefined;
    return { approvalId, kind: typeof kind === "string" && waitKinds.has(kind) ? (kind as PendingWait["kind"]) : "approval" };
  }

  /** An answer drawn for the wait: mostly the right kind, sometimes not. */
  draw(wait: PendingWait): DrawnAnswer {
    const choice = this.random();
    const token = `#${(this.tokens += 1)}`;
    const { approvalId } = wait;
    // A timer or an event wait fired by hand (docs/decisions/0086); a child's
    // wait answered by anyone but its child, an event wait given a value.
    if (wait.kind === "timer" || (wait.kind === "event" && choice < 0.6))
      return { decision: { waitId: approvalId, fire: true }, label: "fired by hand", token, mustBeRefused: false };
    if (wait.kind === "event") return refused({ waitId: approvalId, value: { paid: token } }, "a value (an event wait: the other kind)");
    if (wait.kind === "child") return refused({ approvalId, approved: true }, "approved (a child's wait: only its child answers)");
    if (wait.kind === "input") {
      if (choice < 0.2) return refused({ waitId: approvalId, value: { date: `${refusedMark}${token}` } }, `value refused by its schema${token}`);
      if (choice < 0.3) return refused({ approvalId, approved: true }, "approved (a typed wait: the other kind)");
      return { decision: { waitId: approvalId, value: { date: `2027-01-05${token}` } }, label: `value 2027-01-05${token}`, token, mustBeRefused: false };
    }
    if (choice < 0.05) return refused({ waitId: approvalId, value: { date: `2027-01-05${token}` } }, "a value (an approval: the other kind)");
    if (choice < 0.2) {
      return {
        decision: { approvalId, approved: true, input: { orderId: `edited${token}` } },
        label: `approved with input edited${token}`,
        token,
        mustBeRefused: false,
      };
    }
    if (choice < 0.3) return { decision: { approvalId, respond: { responded: token } }, label: `responded ${token}`, token, mustBeRefused: false };
    const approved = choice < 0.85;
    return { decision: { approvalId, approved, reason: `reason${token}` }, label: approved ? "approved" : "denied", token, mustBeRefused: false };
  }

  /** The answer the drain gives: the right kind, accepted. */
  drainAnswer(wait: PendingWait): DrawnAnswer {
    const token = `#${(this.tokens += 1)}`;
    return wait.kind === "input"
      ? { decision: { waitId: wait.approvalId, value: { date: `2027-01-05${token}` } }, label: `value 2027-01-05${token}`, token, mustBeRefused: false }
      : { decision: { approvalId: wait.approvalId, approved: true, reason: `reason${token}` }, label: "approved", token, mustBeRefused: false };
  }

  /** Remembers who gave the answer. */
  given(answer: DrawnAnswer, caller: AnsweringCaller): void {
    if (answer.token === undefined) return;
    const callers = this.callersByToken.get(answer.token) ?? [];
    callers.push(caller);
    this.callersByToken.set(answer.token, callers);
  }

  /** A caller settled: an answer that must be refused never completes. */
  checkSettled(answer: DrawnAnswer, outcome: string): string | undefined {
    if (answer.mustBeRefused && outcome === "completed") return `an answer that must be refused (${answer.label}) completed its caller`;
    return undefined;
  }

  /** The store's decisions against the answers given. */
  checkCommitted(connection: SqliteConnection): string[] {
    const problems: string[] = [];
    for (const row of connection
      .prepare(
        "SELECT execution_id, json_extract(payload, '$.approvalId') AS approval_id, count(*) AS decisions FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE kind = 'approval_decided' GROUP BY 1, 2 HAVING count(*) > 1",
      )
      .all()) {
      problems.push(`wait ${String(row["approval_id"])} of ${String(row["execution_id"])} has ${String(row["decisions"])} answers committed`);
    }
    for (const row of connection
      .prepare("SELECT execution_id, seq, kind FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE instr(payload, ?) > 0")
      .all(refusedMark)) {
      problems.push(`a value its schema refused is recorded in step ${String(row["seq"])} (${String(row["kind"])}) of ${String(row["execution_id"])}`);
    }
    for (const row of connection
      .prepare("SELECT execution_id, payload FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE kind = 'approval_decided'")
      .all()) {
      const token = /#\d+/.exec(String(row["payload"]))?.[0];
      const callers = token === undefined ? undefined : this.callersByToken.get(token);
      if (callers === undefined || callers.length === 0) continue;
      const refusedByAll = callers.every((caller) => caller.settlements > 0 && refusalCodes.has(caller.outcome ?? ""));
      if (refusedByAll) {
        problems.push(
          `the answer committed for ${String(row["execution_id"])} (${token}) was refused to every caller that gave it: ${callers.map((caller) => `${caller.label} → ${caller.outcome}`).join("; ")}`,
        );
      }
    }
    return problems;
  }
}

/** The answers committed, by what they did (`value`, `edit`, `respond`,
 * `approved`, `declined`): the run's counts print them. */
export function committedAnswers(connection: SqliteConnection): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of connection
    .prepare(
      "SELECT coalesce(json_extract(payload, '$.action.kind'), CASE WHEN json_extract(payload, '$.approved') THEN 'approved' ELSE 'declined' END) AS kind, count(*) AS n FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE kind = 'approval_decided' GROUP BY 1",
    )
    .all()) {
    counts[String(row["kind"])] = Number(row["n"]);
  }
  return counts;
}

function refused(decision: ResumeDecision, label: string): DrawnAnswer {
  return { decision, label, token: undefined, mustBeRefused: true };
}
