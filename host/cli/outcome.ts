// How `run`, `approve` and `reject` wait for an execution and report how it
// ended. A Run's result settles only when the execution really ends, so a
// suspension for approval is noticed through its `approval_required` event
// (sent once the suspension is durable); the command then reports the
// pending approval, closes the environment (the suspended execution stays
// in the store) and exits with `ExitCode.suspended`.

import pc from "./colors.js";
import { PhronomyError, waitingWords, type ApprovalRequest, type ExecutionEvent, type Json, type Run, type RunResult, type UsageTotals } from "../index.js";
import { shellQuote, type CliContext } from "./context.js";
import { ExitCode, debugText, reportedError, type ExitCodeValue, type ReportedError } from "./errors.js";
import { compactJson, outputText, printJson } from "./format.js";
import { formatElapsed, plural, type Progress } from "./progress.js";

export type Outcome =
  | { readonly kind: "ended"; readonly result: RunResult }
  | { readonly kind: "suspended"; readonly request: ApprovalRequest }
  | { readonly kind: "failed"; readonly error: unknown; readonly executionId: string | undefined };

/** The listener a command passes as `onEvent`, and the suspension it saw. */
export interface RunWatch {
  readonly onEvent: (event: ExecutionEvent) => void;
  readonly suspended: Promise<ApprovalRequest>;
}

export function watchRun(progress: Progress): RunWatch {
  let noticeSuspension: (request: ApprovalRequest) => void = () => undefined;
  const suspended = new Promise<ApprovalRequest>((resolve) => {
    noticeSuspension = resolve;
  });
  return {
    suspended,
    onEvent: (event) => {
      progress.event(event);
      if (event.type === "approval_required") noticeSuspension(event.request);
    },
  };
}

/** Waits until the run ends or suspends. */
export async function settle(run: Run, watch: RunWatch): Promise<Outcome> {
  const ended = run.result.then(
    (result): Outcome => ({ kind: "ended", result }),
    async (error: unknown): Promise<Outcome> => ({ kind: "failed", error, executionId: await executionIdOf(run, error) }),
  );
  const suspended = watch.suspended.then((request): Outcome => ({ kind: "suspended", request }));
  return Promise.race([ended, suspended]);
}

async function executionIdOf(run: Run, error: unknown): Promise<string | undefined> {
  if (error instanceof PhronomyError && error.executionId) return error.executionId;
  return run.executionId.then(
    (id) => id,
    () => undefined,
  );
}

export interface OutcomeReportOptions {
  readonly agentId: string;
  readonly progress: Progress;
  /** `--agent-module <path>` to repeat in the approve/reject hint ("" when none is needed). */
  readonly agentModuleArgument: string;
  /** The output was already written to stdout as it streamed. */
  readonly streamed: boolean;
  /** Ctrl-C cancelled the execution: exit 130 rather than 1. */
  readonly interrupted: boolean;
}

/** The JSON every executing command prints with `--json`. */
export interface OutcomeJson {
  readonly executionId: string | null;
  readonly agentId: string;
  readonly outcome: "completed" | "handed_off" | "suspended" | "failed";
  readonly output?: Json;
  readonly usage?: UsageTotals;
  readonly handoff?: unknown;
  readonly approval?: {
    readonly approvalId: string;
    /** `approval`, or `input`: a typed wait (`phronomy resume --value`). */
    readonly kind: NonNullable<ApprovalRequest["kind"]>;
    readonly toolCalls: ApprovalRequest["toolCalls"];
    readonly argumentsHash: string;
    /** A typed wait's response schema (JSON Schema). */
    readonly responseSchema?: Json;
  };
  readonly error?: ReportedError;
  readonly modelCalls: number;
  readonly toolCalls: number;
  readonly elapsedMs: number;
}

export function outcomeJson(outcome: Outcome, options: Pick<OutcomeReportOptions, "agentId" | "progress">): OutcomeJson {
  const counts = options.progress.counts;
  const tally = { modelCalls: counts.modelCalls, toolCalls: counts.toolCalls, elapsedMs: Math.round(counts.elapsedMs) };
  switch (outcome.kind) {
    case "ended": {
      const { result } = outcome;
      return {
        executionId: result.executionId,
        agentId: options.agentId,
        outcome: result.outcome,
        output: result.output,
        usage: result.usage,
        ...(result.handoff ? { handoff: result.handoff } : {}),
        ...tally,
      };
    }
    case "suspended": {
      const { request } = outcome;
      return {
        executionId: request.executionId,
        agentId: options.agentId,
        outcome: "suspended",
        approval: {
          approvalId: request.approvalId,
          kind: request.kind ?? "approval",
          toolCalls: request.toolCalls,
          argumentsHash: request.argumentsHash,
          ...(request.responseSchema !== undefined ? { responseSchema: request.responseSchema } : {}),
        },
        ...tally,
      };
    }
    case "failed":
      return { executionId: outcome.executionId ?? null, agentId: options.agentId, outcome: "failed", error: reportedError(outcome.error), ...tally };
  }
}

/** Prints the outcome (human or JSON) and returns the exit code. */
export function reportOutcome(context: CliContext, outcome: Outcome, options: OutcomeReportOptions): ExitCodeValue {
  options.progress.stop();
  if (context.json) printJson(outcomeJson(outcome, options));
  printHuman(context, outcome, options);
  if (outcome.kind === "ended") return ExitCode.ok;
  if (outcome.kind === "suspended") return ExitCode.suspended;
  return options.interrupted ? ExitCode.interrupted : ExitCode.failure;
}

/** The command that answers a wait that is not an approval. */
export function answerCommand(request: ApprovalRequest, argumentsAfter: string): string {
  switch (request.kind) {
    case "event":
      return `phronomy signal ${shellQuote(request.key ?? "<key>")}${argumentsAfter} --payload '<json>' (or the application's env.signal)`;
    case "timer":
      return `phronomy fire ${request.executionId}${argumentsAfter} (or wait: the clock fires it at its due time)`;
    case "child":
      return `its child execution ${request.child?.executionId ?? ""} resumes it when it ends: phronomy show ${request.executionId} draws the tree`;
    default:
      return `phronomy resume ${request.executionId}${argumentsAfter} --value '<json>'`;
  }
}

/** The summary on stderr; the output on stdout unless `--json` carries it. */
function printHuman(context: CliContext, outcome: Outcome, options: OutcomeReportOptions): void {
  const counts = options.progress.counts;
  const tally = [plural(counts.modelCalls, "model call"), plural(counts.toolCalls, "tool call")];
  switch (outcome.kind) {
    case "ended": {
      const { result } = outcome;
      if (context.json) {
        // stdout carries the JSON document.
      } else if (result.outcome === "handed_off" && result.handoff) {
        process.stdout.write(`handed off to agent "${result.handoff.targetAgentId}": ${result.handoff.reason}\n`);
      } else if (!options.streamed) {
        process.stdout.write(`${outputText(result.output)}\n`);
      }
      process.stderr.write(
        `${pc.green("✔")} ${result.outcome} in ${formatElapsed(counts.elapsedMs)} · execution ${result.executionId} · ${tally.join(" · ")} · ${result.usage.totalTokens} tokens\n`,
      );
      return;
    }
    case "suspended": {
      const { request } = outcome;
      const store = context.storeArgument();
      const kind = request.kind ?? "approval";
      if (kind !== "approval") {
        const id = `${kind === "input" ? "wait" : `${kind} wait`} id ${request.approvalId}`;
        process.stderr.write(`${pc.yellow("⏸")} execution ${request.executionId} is ${waitingWords(kind)} (${id}):\n`);
        for (const call of request.toolCalls) process.stderr.write(`    ${call.toolName}(${compactJson(call.input)})\n`);
        process.stderr.write(`  it stays in the store until answered:\n`);
        process.stderr.write(`    ${answerCommand(request, `${options.agentModuleArgument}${store}`)}\n`);
        return;
      }
      process.stderr.write(`${pc.yellow("⏸")} execution ${request.executionId} is waiting for approval (approval id ${request.approvalId}):\n`);
      for (const call of request.toolCalls) process.stderr.write(`    ${call.toolName}(${compactJson(call.input)})\n`);
      process.stderr.write(`  it stays in the store until decided:\n`);
      process.stderr.write(`    phronomy approve ${request.executionId}${options.agentModuleArgument}${store} [--reason "…"]\n`);
      process.stderr.write(`    phronomy reject ${request.executionId}${options.agentModuleArgument}${store} --reason "…"\n`);
      return;
    }
    case "failed": {
      const reported = reportedError(outcome.error);
      const where = outcome.executionId && !reported.message.includes(outcome.executionId) ? ` (execution ${outcome.executionId})` : "";
      const ending = reported.code === "CANCELLED" ? "cancelled" : reported.code === "TIMEOUT" ? "timed out" : "failed";
      process.stderr.write(`${pc.red("✖")} ${ending}: [${reported.code}] ${reported.message}${where}\n`);
      if (context.options.debug) process.stderr.write(`${debugText(outcome.error)}\n`);
      return;
    }
  }
}
