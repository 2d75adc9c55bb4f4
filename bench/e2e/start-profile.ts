// Where a filed start's latency goes, in bench/e2e's PostgreSQL spread
// measurement with starts arriving at random processes: each child reports
// the marks it took (`host/store/start-timing.ts`) by execution id — the
// filer's and the owner's are in different processes — and this joins them
// and prints the median and p90 of each stage, over the starts with every
// mark, plus the samples (poll and claim round trips, claim sizes).

import type { StartMarks, StartStage } from "../../host/store/start-timing.js";
import { percentile } from "./workload.js";

/** The stages printed: from one mark to the next. */
const stages: readonly (readonly [string, StartStage, StartStage])[] = [
  ["filing", "filing", "filed"],
  ["notify", "filed", "notified"],
  ["to claim", "filed", "claiming"],
  ["claim", "claiming", "claimed"],
  ["admit", "claimed", "admitted"],
  ["run", "admitted", "ended"],
  ["settle", "admitted", "settled"],
  ["notice", "ended", "noticed"],
  ["total", "filing", "noticed"],
];

/** The lines describing the joined marks and the samples. */
export function describeStartProfile(
  reports: readonly { readonly startMarks?: Record<string, StartMarks>; readonly startSamples?: Record<string, number[]> }[],
): string[] {
  const joined = new Map<string, StartMarks>();
  for (const report of reports) {
    for (const [executionId, marks] of Object.entries(report.startMarks ?? {})) joined.set(executionId, { ...joined.get(executionId), ...marks });
  }
  const complete = [...joined.values()].filter(
    (marks) => marks.filing !== undefined && marks.noticed !== undefined && marks.claimed !== undefined && marks.ended !== undefined,
  );
  const lines = [`filed starts profiled: ${complete.length} with every mark (of ${joined.size} marked); ms p50 / p90 per stage:`];
  lines.push(
    stages
      .map(([name, from, to]) => {
        const values = complete
          .flatMap((marks) => (marks[from] !== undefined && marks[to] !== undefined ? [marks[to]! - marks[from]!] : []))
          .sort((a, b) => a - b);
        return `${name} ${percentile(values, 0.5).toFixed(1)} / ${percentile(values, 0.9).toFixed(1)}`;
      })
      .join(" · "),
  );
  const samples = new Map<string, number[]>();
  for (const report of reports) {
    for (const [name, values] of Object.entries(report.startSamples ?? {})) samples.set(name, [...(samples.get(name) ?? []), ...values]);
  }
  lines.push(
    [...samples]
      .map(([name, values]) => {
        const sorted = [...values].sort((a, b) => a - b);
        return `${name}: n ${sorted.length}, p50 ${percentile(sorted, 0.5).toFixed(1)}, p90 ${percentile(sorted, 0.9).toFixed(1)}, max ${(sorted.at(-1) ?? 0).toFixed(1)}`;
      })
      .join(" · "),
  );
  return lines;
}
