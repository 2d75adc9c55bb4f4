// What a posted action does: one call of the public admin API each
// (`env.admin`), and a one-line notice or error for the page it returns to.
// An action waits for what it can know quickly — a decision filed or
// committed, a cancel or retry refused — and no longer: the page then shows
// the execution going on, live.

import { randomUUID } from "node:crypto";
import { settledWithin, type BulkAnswer, type Environment, type Run } from "../index.js";
import { decisionOfForm, FormError } from "./decision-fields.js";
import { scheduleAction } from "./schedule-actions.js";

export interface ActionOutcome {
  readonly status: 200 | 404;
  readonly notice?: string;
  readonly error?: string;
  /** The page to return to (default: the execution's, or the list). */
  readonly target?: string;
}

/** Who acts, as the embedding application identified the request
 * (`createDashboard(env, { identify })`). */
export interface ActionContext {
  readonly decidedBy?: string;
}

/** How long a decision waits to hear it was refused (its schema, the
 * wait's kind) before the page returns and shows it going on. */
export const refusalWaitMs = 1_500;

/** A message sent from the page is at most this long. */
export const messageLengthMax = 20_000;

/** How long an action waits for its immediate effect before it returns
 * (the page shows the rest live). */
export const actionWaitMs = 3_000;

/** A reason longer than this is refused (it is recorded and may be told to the model). */
export const reasonLengthMax = 2_000;

export async function runAction(environment: Environment, action: string, fields: URLSearchParams, context: ActionContext = {}): Promise<ActionOutcome> {
  const handler = handlers[action];
  if (handler === undefined) return { status: 404 };
  try {
    const reason = fields.get("reason") ?? "";
    if (reason.length > reasonLengthMax) return { status: 200, error: `a reason is at most ${reasonLengthMax} characters` };
    const done = await handler(environment, fields, reason.trim(), context);
    return typeof done === "string" ? { status: 200, notice: done } : { status: 200, ...done };
  } catch (error) {
    return { status: 200, error: messageOf(error), ...targetOnError(action, fields) };
  }
}

type Handler = (
  environment: Environment,
  fields: URLSearchParams,
  reason: string,
  context: ActionContext,
) => Promise<string | { readonly notice?: string; readonly error?: string; readonly target?: string }>;

/** Codes of a decision refused before anything was decided. */
const refusalCodes = new Set(["INVALID_INPUT", "APPROVAL_MISMATCH"]);

const handlers: Readonly<Record<string, Handler>> = {
  async decide(environment, fields, reason, context) {
    const executionId = required(fields, "executionId");
    const approvalId = required(fields, "approvalId");
    const pending = (await environment.admin.approvals()).find((approval) => approval.executionId === executionId);
    if (pending === undefined) throw new Error(`execution ${executionId} is not waiting for a decision (it may have been decided already)`);
    if (pending.request.approvalId !== approvalId)
      throw new Error(`execution ${executionId} waits on ${pending.request.approvalId}, not ${approvalId}: look at it again before deciding`);
    const decision = decisionOfForm(fields, pending, context.decidedBy);
    const run = await environment.admin.decide(executionId, decision);
    run.result.catch(() => undefined); // the page shows how it ends
    // A refused answer (its schema, the wait's kind) rejects at once; an
    // accepted one goes on, shown live.
    const settled = await settledWithin(
      run.result.then(
        () => undefined,
        (error: unknown) => error,
      ),
      refusalWaitMs,
    );
    const code = (settled as { code?: unknown } | undefined)?.code;
    if (settled !== undefined && typeof code === "string" && refusalCodes.has(code)) return { error: `not decided: ${messageOf(settled)}` };
    const by = decision.decidedBy !== undefined ? ` (as ${decision.decidedBy})` : "";
    if (decision.value !== undefined) return `answered execution ${executionId}${by}; it goes on`;
    if (decision.fire === true) return `fired the wait of execution ${executionId} now${by}; it goes on`;
    if (decision.respond !== undefined) return `responded in place of the tool in execution ${executionId}${by}; it goes on`;
    if (decision.approved === false) return `rejected execution ${executionId}${by}; the model is told${reason !== "" ? ` why: ${reason}` : ""}`;
    return `approved execution ${executionId}${decision.input !== undefined ? " with edited arguments" : ""}${by}; it goes on`;
  },

  async start(environment, fields) {
    const definition = required(fields, "definition");
    const message = (fields.get("message") ?? "").trim();
    if (message === "") throw new FormError("write a message to send");
    if (message.length > messageLengthMax) throw new FormError(`a message is at most ${messageLengthMax} characters`);
    const known = environment.admin.definitions().find((candidate) => candidate.name === definition);
    const given = (fields.get("conversationId") ?? "").trim();
    const conversationId = known?.kind === "agent" ? definition : given !== "" ? given : `chat-${randomUUID()}`;
    const run = environment.admin.start(definition, message, { conversationId });
    run.result.catch(() => undefined); // the page shows how it goes
    const target = `/conversations/${encodeURIComponent(conversationId)}`;
    // A refusal (a visitor, a closed environment, a bad id) comes at once.
    const refused = await settledWithin(
      Promise.race([run.executionId.then(() => undefined), run.result.then(() => undefined)]).catch((error: unknown) => error ?? new Error("refused")),
      actionWaitMs,
    );
    if (refused !== undefined) return { error: messageOf(refused), target: given === "" && known?.kind !== "agent" ? "/talk" : target };
    return { notice: `sent to ${definition}, conversation ${conversationId}`, target };
  },

  /** An event a wait is keyed on, sent as the application's webhook would
   * (`env.signal`, docs/decisions/0077). */
  async signal(environment, fields) {
    const key = required(fields, "key");
    const text = fields.get("payload") ?? "";
    let payload: unknown;
    try {
      payload = JSON.parse(text === "" ? "null" : text);
    } catch (error) {
      return { error: `the event's payload is not JSON: ${error instanceof Error ? error.message : String(error)}` };
    }
    const sent = await environment.signal(key, payload);
    return sent.status === "resumed" ? `sent the event ${key}: execution ${sent.executionId} goes on` : `kept the event ${key} for the next wait on it`;
  },

  async cancel(environment, fields, reason) {
    const executionId = required(fields, "executionId");
    const cancelled = environment.admin.cancel(executionId, reason !== "" ? { reason } : {});
    cancelled.catch(() => undefined);
    const result = await settledWithin(cancelled, actionWaitMs);
    return result === undefined
      ? `cancel of ${executionId} requested: it stops after its work in flight`
      : `execution ${executionId} ended: ${describe(result)}`;
  },

  async retry(environment, fields) {
    const executionId = required(fields, "executionId");
    const run: Run = environment.admin.retry(executionId);
    // A refusal comes at once; a retry that runs settles later.
    await settledWithin(run.result, 250);
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

  /** Cancel or run one schedule, confirmed on its page (`schedule-actions.ts`). */
  schedule: (environment, fields) => scheduleAction(environment, fields),

  async recover(environment) {
    const report = await environment.admin.recover();
    const continued = report.filter((item) => item.status === "continued").length;
    const attention = report.filter((item) => item.status === "needs_attention").length;
    return `recovery: ${report.length} unfinished, ${continued} continued, ${attention} still need attention`;
  },
};

/** Where a refused action returns: the page it was posted from. */
function targetOnError(action: string, fields: URLSearchParams): { target?: string } {
  const scheduleId = fields.get("scheduleId");
  if (action === "schedule") return { target: scheduleId ? `/schedules/${encodeURIComponent(scheduleId)}` : "/schedules" };
  if (action !== "start") return {};
  const conversationId = fields.get("conversationId");
  return { target: conversationId ? `/conversations/${encodeURIComponent(conversationId)}` : "/talk" };
}

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
