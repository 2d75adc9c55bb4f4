// The posted schedule actions (docs/decisions/0088): cancel or run one
// schedule, confirmed on its page (`schedules-page.ts`), each one call of
// the public API — `env.cancelSchedule`, `env.runSchedule` — and a notice
// for the schedules page it returns to.

import type { Environment, Schedule } from "../index.js";

/** What the action returns: a notice or an error, and the page to return to. */
export interface ScheduleActionOutcome {
  readonly notice?: string;
  readonly error?: string;
  readonly target: string;
}

/** How long a run now asked of another process (a visitor's owner,
 * PostgreSQL) is waited for before the page answers that it is claimed:
 * a posted form should not hang. */
const runWaitMs = 3_000;

export async function scheduleAction(environment: Environment, fields: URLSearchParams): Promise<ScheduleActionOutcome> {
  const scheduleId = fields.get("scheduleId") ?? "";
  const action = fields.get("scheduleAction");
  const target = scheduleId === "" ? "/schedules" : `/schedules/${encodeURIComponent(scheduleId)}`;
  if (scheduleId === "") return { error: 'the form lacks "scheduleId"', target };
  if (action !== "cancel" && action !== "run") return { error: 'the schedule action must be "cancel" or "run"', target };
  if (action === "cancel") {
    const cancelled = await environment.cancelSchedule(scheduleId);
    return { notice: `cancelled schedule ${cancelled.scheduleId} of conversation ${cancelled.agentId}: it fires no more`, target };
  }
  const before = await environment.schedule(scheduleId);
  const after = await environment.runSchedule(scheduleId, { waitMs: runWaitMs });
  return { notice: firedNotice(before, after), target };
}

function firedNotice(before: Schedule | undefined, after: Schedule): string {
  const firing = after.lastFiring;
  if (firing === undefined || after.firings === before?.firings)
    return `schedule ${after.scheduleId} is claimed to fire now: the process that defines its agent starts it`;
  const refused = firing.outcome === "refused" ? `, refused (${firing.error ?? "by its busy policy"})` : "";
  return `fired schedule ${after.scheduleId} now: execution ${firing.executionId ?? "none"} ${firing.outcome}${refused}`;
}
