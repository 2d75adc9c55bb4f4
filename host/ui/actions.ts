// What a posted action does: one call of the public admin API each
// (`env.admin`), and a one-line notice or error for the page it returns to.
// An action waits for what it can know quickly — a decision filed or
// committed, a cancel or retry refused — and no longer: the page then shows
// the execution going on, live.

import type { BulkAnswer, Environment, Run } from "../index.js";

export interface ActionOutcome {
  readonly status: 200 | 404;
  readonly notice?: string;
  readonly error?: string;
}

/** How long an action waits for its immediate effect before it returns
 * (the page shows the rest live). */
export const actionWaitMs = 3_000;

/** A reason longer than this is refused (it is recorded and may be told to the model). */
export const reasonLengthMax = 2_000;

export async function runAction(environment: Environment, action: string, fields: URLSearchParams): Promise<ActionOutcome> {
  const handler = handlers[action];
  if (handler === undefined) return { status: 404 };
  try {
    const reason = fields.get("reason") ?? "";
    if (reason.length > reasonLengthMax) return { status: 200, error: `a reason is at most ${reasonLengthMax} characters` };
    return { status: 200, notice: await handler(environment, fields, reason.trim()) };
  } catch (error) {
    return { status: 200, error: messageOf(error) };
  }
}

type Handler = (environment: Environment, fields: URLSearchParams, reason: string) => Promise<string>;

const handlers: Readonly<Record<string, Handler>> = {
  async decide(environment, fields, reason) {
    const executionId = required(fields, "executionId");
    const decision = fields.get("decision");
    if (decision !== "approve" && decision !== "reject") throw new Error(`the decision must be "approve" or "reject"`);
    const argumentsHash = fields.get("argumentsHash");
    const run = await environment.admin.decide(executionId, {
      approvalId: required(fields, "approvalId"),
      approved: decision === "approve",
      ...(argumentsHash ? { argumentsHash } : {}),
      ...(reason !== "" ? { reason } : {}),
    });
    run.result.catch(() => undefined); // the page shows how it ends
    await within(run.executionId, actionWaitMs);
    return decision === "approve"
      ? `approved execution ${executionId}; it goes on`
      : `rejected execution ${executionId}; the model is told${reason !== "" ? ` why: ${reason}` : ""}`;
  },

  async cancel(environment, fields, reason) {
    const executionId = required(fields, "executionId");
    const cancelled = environment.admin.cancel(executionId, reason !== "" ? { reason } : {});
    cancelled.catch(() => undefined);
    const result = await within(cancelled, actionWaitMs);
    return result === undefined
      ? `cancel of ${executionId} requested: it stops after its work in flight`
      : `execution ${executionId} ended: ${describe(result)}`;
  },

  async retry(environment, fields) {
    const executionId = required(fields, "executionId");
    const run: Run = environment.admin.retry(executionId);
    // A refusal comes at once; a retry that runs settles later.
    await within(run.result, 250);
    return `retrying execution ${executionId} from its last durable step`;
  },

  /** A bulk cancel or retry, confirmed on the bulk page (`bulk-page.ts`):
   * exactly the ids it listed, through `env.admin.cancelMany`/`retryMany`. */
  async bulk(environment, fields, reason) {
    const action = fields.get("bulkAction");
    if (action !== "cancel" && action !== "retry") throw new Error(`the bulk action must be "cancel" or "retry"`);
    const executionIds = [...new Set(fields.getAll("executionIds"))];
    if (executionIds.length === 0) throw new Error("no execution was selected");
    const answers =
      action === "cancel"
        ? await environment.admin.cancelMany({ executionIds }, reason !== "" ? { reason } : {})
        : await environment.admin.retryMany({ executionIds });
    return bulkNotice(action, answers);
  },

  async recover(environment) {
    const report = await environment.admin.recover();
    const continued = report.filter((item) => item.status === "continued").length;
    const attention = report.filter((item) => item.status === "needs_attention").length;
    return `recovery: ${report.length} unfinished, ${continued} continued, ${attention} still need attention`;
  },
};

/** Refusals a bulk notice names one by one (the rest are counted). */
const refusalsNamedMax = 5;

function bulkNotice(action: "cancel" | "retry", answers: readonly BulkAnswer[]): string {
  const done = answers.filter((answer) => answer.status === "done").length;
  const requested = answers.filter((answer) => answer.status === "requested").length;
  const refused = answers.filter((answer) => answer.status === "refused");
  const parts = [action === "cancel" ? `${done} cancelled` : `${done} retrying`];
  if (requested > 0) parts.push(`${requested} stopping after their work in flight`);
  if (refused.length > 0) {
    const named = refused
      .slice(0, refusalsNamedMax)
      .map((answer) => `${answer.executionId} (${answer.error?.code ?? "refused"}: ${answer.error?.message ?? ""})`);
    parts.push(`${refused.length} refused: ${named.join("; ")}${refused.length > refusalsNamedMax ? "; …" : ""}`);
  }
  return `${action} of ${answers.length} execution${answers.length === 1 ? "" : "s"}: ${parts.join(", ")}`;
}

function required(fields: URLSearchParams, name: string): string {
  const value = fields.get(name);
  if (value === null || value === "") throw new Error(`the form lacks "${name}"`);
  return value;
}

/** The promise's value if it settles within `ms`, undefined otherwise; a
 * rejection within `ms` is thrown. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function describe(result: unknown): string {
  const record = result as { status?: string; outcome?: string } | null;
  return record?.outcome ?? record?.status ?? "cancelled";
}

function messageOf(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" ? `[${code}] ${error.message}` : error.message;
  }
  return String(error);
}
