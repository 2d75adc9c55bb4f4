// `phronomy schedules [list]`, `schedules show <id>`, `schedules cancel
// <id>`, `schedules run <id>`: scheduled starts of conversations
// (docs/decisions/0078) read and acted on by id through `env.schedules`,
// `env.schedule`, `env.cancelSchedule` and `env.runSchedule` — the calls
// an application makes. Beside a live owner of a SQLite store the command
// is a visitor (docs/decisions/0088): it reads them, cancels one, and
// claims a run now that the owner starts (docs/decisions/0097).

import pc from "../colors.js";
import type { Environment, Schedule } from "../../index.js";
import type { CliContext } from "../context.js";
import { CliError, ExitCode, type ExitCodeValue } from "../errors.js";
import { compactJson, formatTime, printJson, table } from "../format.js";
import { openStore, resolveStore } from "../store.js";

export interface ScheduleListOptions {
  readonly agent?: string;
  readonly definition?: string;
  readonly state?: "active" | "cancelled" | "done";
  readonly limit?: number;
}

/** Rows `schedules` shows by default. */
const scheduleLimitDefault = 50;
/** Characters of a schedule's input shown in the table. */
const inputShownMax = 40;

export async function schedulesListCommand(context: CliContext, options: ScheduleListOptions): Promise<ExitCodeValue> {
  const limit = options.limit ?? scheduleLimitDefault;
  const rows = await withStore(context, (environment) =>
    environment.schedules({
      limit,
      ...(options.agent !== undefined ? { agentId: options.agent } : {}),
      ...(options.definition !== undefined ? { definition: options.definition } : {}),
      ...(options.state !== undefined ? { state: options.state } : {}),
    }),
  );
  if (context.json) {
    printJson({ schedules: rows.map(scheduleJson) });
    return ExitCode.ok;
  }
  if (rows.length === 0) {
    process.stdout.write("no schedules: agent.conversation(id).schedule(input, { at } | { cron }) makes one\n");
    return ExitCode.ok;
  }
  process.stdout.write(
    `${table(
      ["schedule", "conversation", "when", "state", "next run", "last fired", "input"],
      rows.map((schedule) => [
        schedule.scheduleId,
        schedule.definition !== undefined ? `${schedule.agentId} (${schedule.definition})` : schedule.agentId,
        timingOf(schedule),
        stateText(schedule.state),
        schedule.nextRunAt !== undefined ? formatTime(schedule.nextRunAt) : "-",
        schedule.lastFiring !== undefined ? `${formatTime(schedule.lastFiring.firedAt)} ${schedule.lastFiring.outcome}` : "-",
        compactJson(schedule.input, inputShownMax),
      ]),
    )}\n`,
  );
  process.stdout.write(`${rows.length} schedule${rows.length === 1 ? "" : "s"}${rows.length === limit ? ` (the newest ${limit}: --limit shows more)` : ""}\n`);
  return ExitCode.ok;
}

export async function scheduleShowCommand(context: CliContext, scheduleId: string): Promise<ExitCodeValue> {
  const schedule = await withStore(context, async (environment) => found(await environment.schedule(scheduleId), scheduleId));
  if (context.json) printJson({ schedule: scheduleJson(schedule) });
  else process.stdout.write(`${scheduleLines(context, schedule).join("\n")}\n`);
  return ExitCode.ok;
}

/** `cancel` or `run`: one call of the public API, and the schedule after it.
 * Beside a live owner the command visits the store and asks there too: a
 * cancel is one compare-and-set, a run now is claimed for the owner, which
 * starts it (docs/decisions/0097). */
export async function scheduleActionCommand(context: CliContext, scheduleId: string, action: "cancel" | "run", waitMs?: number): Promise<ExitCodeValue> {
  const { before, after } = await withStore(context, async (environment) => {
    const before = found(await environment.schedule(scheduleId), scheduleId);
    if (action === "cancel") return { before, after: await environment.cancelSchedule(scheduleId) };
    return { before, after: await environment.runSchedule(scheduleId, waitMs !== undefined ? { waitMs } : {}) };
  });
  if (context.json) printJson({ schedule: scheduleJson(after) });
  else if (action === "cancel") sayCancelled(context, before, after);
  else sayFired(context, before, after);
  return ExitCode.ok;
}

function sayCancelled(context: CliContext, before: Schedule, after: Schedule): void {
  if (before.state !== "active") {
    context.say(`schedule ${after.scheduleId} of conversation "${after.agentId}" was ${before.state} already: nothing to cancel`);
    return;
  }
  context.say(`${pc.yellow("cancelled")} schedule ${after.scheduleId} of conversation "${after.agentId}": it fires no more`);
}

/** A firing settled (here or by the process that fires it) names its
 * execution; one not settled yet is claimed and pending. */
function sayFired(context: CliContext, before: Schedule, after: Schedule): void {
  const firing = after.lastFiring;
  if (after.firings === before.firings || firing === undefined) {
    const agent = after.definition ?? after.agentId;
    context.say(
      `${pc.green("claimed")} schedule ${after.scheduleId} to fire now: no process started it yet — it starts in a process that defines agent "${agent}" (the store's owner, or its next owner at once; on PostgreSQL a process that fires schedules); \`phronomy schedules show ${after.scheduleId}\` tells when it fired`,
    );
    return;
  }
  const started = firing.executionId !== undefined ? `: execution ${firing.executionId} (${firing.outcome})` : "";
  const refused = firing.outcome === "refused" ? ` — refused${firing.error !== undefined ? ` [${firing.error}]` : ""}` : "";
  context.say(`${pc.green("fired")} schedule ${after.scheduleId} of conversation "${after.agentId}" now${started}${refused}`);
  if (after.nextRunAt !== undefined) context.say(pc.dim(`its next run stays ${formatTime(after.nextRunAt)}`));
}

async function withStore<T>(context: CliContext, body: (environment: Environment) => Promise<T>): Promise<T> {
  const location = resolveStore(context.options.store, { mustExist: true });
  const environment = await openStore(location, { logger: context.logger, visitBesideOwner: true, recover: false });
  try {
    return await body(environment);
  } finally {
    await environment.close();
  }
}

function found(schedule: Schedule | undefined, scheduleId: string): Schedule {
  if (schedule !== undefined) return schedule;
  throw new CliError("SCHEDULE_NOT_FOUND", `no schedule "${scheduleId}" in the store; \`phronomy schedules\` lists them`, ExitCode.failure, {
    details: { scheduleId },
  });
}

function scheduleLines(context: CliContext, schedule: Schedule): string[] {
  const field = (name: string, value: string) => `${pc.dim(name.padEnd(13))}${value}`;
  const lines = [
    field(
      "schedule",
      `${pc.bold(schedule.scheduleId)} · conversation "${schedule.agentId}"${schedule.definition !== undefined ? ` of "${schedule.definition}"` : ""}`,
    ),
    field("when", timingOf(schedule)),
    field("state", `${stateText(schedule.state)} · ${schedule.firings} firing${schedule.firings === 1 ? "" : "s"} · made ${formatTime(schedule.createdAt)}`),
    field("next run", schedule.nextRunAt !== undefined ? formatTime(schedule.nextRunAt) : "-"),
    field("input", compactJson(schedule.input, 200)),
  ];
  if (Object.keys(schedule.options).length > 0) lines.push(field("options", compactJson(schedule.options, 200)));
  const firing = schedule.lastFiring;
  if (firing !== undefined) {
    const execution = firing.executionId !== undefined ? ` · execution ${firing.executionId}` : "";
    const error = firing.error !== undefined ? ` [${firing.error}]` : "";
    lines.push(field("last firing", `${firing.outcome}${error} at ${formatTime(firing.firedAt)} (slot ${formatTime(firing.slotAt)})${execution}`));
  }
  if (schedule.state === "active") {
    const store = context.storeArgument();
    lines.push(field("", `run now: phronomy schedules run ${schedule.scheduleId}${store} · cancel: phronomy schedules cancel ${schedule.scheduleId}${store}`));
  }
  return lines;
}

function timingOf(schedule: Schedule): string {
  if (schedule.cron !== undefined) return `cron "${schedule.cron}"${schedule.timezone !== undefined ? ` ${schedule.timezone}` : " UTC"}`;
  return schedule.at !== undefined ? `at ${formatTime(schedule.at)}` : "-";
}

function stateText(state: Schedule["state"]): string {
  return state === "active" ? pc.green(state) : state === "cancelled" ? pc.yellow(state) : state;
}

/** A schedule as `--json` prints it: times as ISO text. */
function scheduleJson(schedule: Schedule): Record<string, unknown> {
  const iso = (at: number | undefined) => (at === undefined ? null : new Date(at).toISOString());
  return {
    ...schedule,
    at: iso(schedule.at),
    nextRunAt: iso(schedule.nextRunAt),
    firingSlotAt: iso(schedule.firingSlotAt),
    createdAt: iso(schedule.createdAt),
    lastFiring:
      schedule.lastFiring === undefined ? null : { ...schedule.lastFiring, slotAt: iso(schedule.lastFiring.slotAt), firedAt: iso(schedule.lastFiring.firedAt) },
  };
}
