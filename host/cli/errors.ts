// What the `phronomy` command exits with, and the errors it raises itself
// (bad arguments, a store or execution that is not there, an agent module
// that cannot be loaded). Errors of the runtime (`PhronomyError`) pass
// through unchanged: the CLI prints their `code` and message. Every error
// becomes one line on stderr (and `{ "error": … }` on stdout with
// `--json`); a stack trace only with `--debug`.

import { PhronomyError } from "../index.js";

/** Exit codes, stable for scripts (docs/cli.md lists them). */
export const ExitCode = {
  /** The command did what it was asked; an execution completed or handed off. */
  ok: 0,
  /** The execution failed, or the command could not do its job. */
  failure: 1,
  /** Bad arguments: nothing was opened or changed. */
  usage: 2,
  /** The execution is suspended, waiting for an approval decision. */
  suspended: 3,
  /** Interrupted by Ctrl-C (SIGINT): the execution was cancelled. 128 + 2, the shell's convention. */
  interrupted: 130,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

export type CliErrorCode =
  | "USAGE"
  | "STORE_NOT_FOUND"
  | "STORE_NOT_SUPPORTED"
  | "EXECUTION_NOT_FOUND"
  | "SCHEDULE_NOT_FOUND"
  | "NOT_WAITING_FOR_APPROVAL"
  | "AGENT_MODULE"
  | "MODEL_NOT_CONFIGURED"
  | "DEMO_FAILED"
  | "MISSING_PACKAGE"
  | "INTERRUPTED";

export class CliError extends Error {
  constructor(
    readonly code: CliErrorCode,
    message: string,
    readonly exitCode: ExitCodeValue = code === "USAGE" ? ExitCode.usage : code === "INTERRUPTED" ? ExitCode.interrupted : ExitCode.failure,
    options: { readonly cause?: unknown; readonly details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CliError";
    this.details = options.details;
  }

  readonly details: Record<string, unknown> | undefined;
}

/** An error as the CLI reports it: a code, one line, and the ids involved. */
export interface ReportedError {
  readonly code: string;
  readonly message: string;
  readonly executionId?: string;
  readonly agentId?: string;
  readonly details?: Record<string, unknown>;
}

export function reportedError(error: unknown): ReportedError {
  if (error instanceof CliError) {
    return { code: error.code, message: oneLine(error.message), ...(error.details ? { details: error.details } : {}) };
  }
  if (error instanceof PhronomyError) {
    return {
      code: error.code,
      message: oneLine(error.message),
      ...(error.executionId ? { executionId: error.executionId } : {}),
      ...(error.agentId ? { agentId: error.agentId } : {}),
      ...(error.details ? { details: jsonSafe(error.details) } : {}),
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: "INTERNAL", message: oneLine(message) };
}

/** The exit code for an error that ended a command. */
export function exitCodeOf(error: unknown): ExitCodeValue {
  if (error instanceof CliError) return error.exitCode;
  return ExitCode.failure;
}

/** Messages are printed as one line: newlines inside them (a provider's
 * multi-line error body) are folded. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}

/** The full story for `--debug`: the stack and every cause's. */
export function debugText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && depth < causeDepthMax; depth += 1) {
    parts.push(current instanceof Error ? (current.stack ?? current.message) : String(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join("\ncaused by: ");
}

/** Causes printed by `--debug`; a cycle must not loop forever. */
const causeDepthMax = 8;

function jsonSafe(value: Record<string, unknown>): Record<string, unknown> {
  try {
    return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  } catch {
    return {};
  }
}
