// `phronomy prune [--older-than <duration>] [--agent <id>]`: deletes the
// store's finished executions (with their timelines and inbox rows; the
// conversations' memory stays) through `env.prune()`, and says what was
// removed. Without `--older-than`, the environment's default retention
// applies (7 days: docs/decisions/0027). Unfinished and suspended
// executions are never touched. On SQLite it needs to own the store.

import type { CliContext } from "../context.js";
import { CliError, ExitCode, type ExitCodeValue } from "../errors.js";
import { printJson } from "../format.js";
import { openStore, resolveStore } from "../store.js";
import type { PruneOptions, PruneReport } from "../../index.js";

export interface PruneCommandOptions {
  readonly olderThan?: string;
  readonly agent?: string;
}

const unitMs: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `7d`, `12h`, `30m`, `45s`, `500ms` (or `0`) in milliseconds. */
export function parseDuration(text: string, option = "--older-than"): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (text.trim() === "0") return 0;
  const value = match ? Number(match[1]) * unitMs[match[2]!]! : Number.NaN;
  if (!Number.isSafeInteger(value)) {
    throw new CliError("USAGE", `${option} must be a duration such as 7d, 12h, 30m, 45s or 500ms, got ${JSON.stringify(text)}`);
  }
  return value;
}

export async function pruneCommand(context: CliContext, options: PruneCommandOptions): Promise<ExitCodeValue> {
  const olderThanMs = options.olderThan === undefined ? undefined : parseDuration(options.olderThan);
  const location = resolveStore(context.options.store, { mustExist: true });
  const request: PruneOptions = {
    ...(olderThanMs !== undefined ? { olderThanMs } : {}),
    ...(options.agent !== undefined ? { agentId: options.agent } : {}),
  };
  const environment = await openStore(location, { logger: context.logger, recover: false });
  let report: PruneReport;
  try {
    report = await environment.prune(request);
  } finally {
    await environment.close();
  }
  if (context.json) {
    printJson({ store: location.path, ...request, pruned: report });
    return ExitCode.ok;
  }
  const age = options.olderThan === undefined ? "past the default retention (7 days)" : `finished more than ${options.olderThan} ago`;
  const agent = options.agent === undefined ? "" : ` of agent "${options.agent}"`;
  const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;
  process.stdout.write(
    `pruned ${plural(report.executions, "execution")}${agent} ${age} from ${location.path}: ${plural(report.steps, "step")}, ${plural(report.journal, "journal record")} past the kept memory, ${plural(report.approvals, "approval inbox row")}\n`,
  );
  return ExitCode.ok;
}
