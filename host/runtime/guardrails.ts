// Calling an application's guardrail (docs/decisions/0056): a guardrail
// runs on the control loop, so whatever it does wrong — throws, or answers
// something that is not a verdict (a promise from an async function, an
// unknown action, a redaction without text) — must become an answer the
// loop can carry on with. It fails closed: the text is blocked, with a
// reason that says the guardrail failed and how, and the run fails with
// INPUT_BLOCKED / OUTPUT_BLOCKED like any block.

import type { Guardrail, GuardrailVerdict } from "./options.js";

/** The verdict of `guardrail` on `text`; a guardrail that failed blocks,
 * its `failed` field saying how (for the error's message). */
export type CheckedVerdict = GuardrailVerdict & { readonly failed?: string };

const ALLOW: CheckedVerdict = { action: "allow" };

export function checkWithGuardrail(guardrail: Guardrail | undefined, text: string): CheckedVerdict {
  if (guardrail === undefined) return ALLOW;
  let verdict: unknown;
  try {
    verdict = guardrail(text);
  } catch (error) {
    return failed(`threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  }
  return verdictOrFailure(verdict);
}

function verdictOrFailure(verdict: unknown): CheckedVerdict {
  const given = verdict as Partial<{ action: unknown; text: unknown; reason: unknown; then: unknown }> | null;
  if (typeof given !== "object" || given === null) return failed(`answered ${String(verdict)}, not a verdict`);
  if (typeof given.then === "function") return failed("answered a promise (guardrails are synchronous: they run on the control loop)");
  switch (given.action) {
    case "allow": return ALLOW;
    case "redact": return typeof given.text === "string" ? { action: "redact", text: given.text } : failed("answered a redaction without a text string");
    case "block": return { action: "block", reason: typeof given.reason === "string" ? given.reason : String(given.reason) };
    default: return failed(`answered the unknown action ${JSON.stringify(given.action)}`);
  }
}

function failed(how: string): CheckedVerdict {
  return { action: "block", reason: `the guardrail ${how}`, failed: how };
}

/** The sentence of the error a text blocked by a failed guardrail fails
 * with (`subject` names whose guardrail it is). */
export function guardrailFailedMessage(which: "input" | "output", subject: string, how: string): string {
  const what = which === "input" ? "input" : "answer";
  return `the ${which} guardrail ${subject} ${how}, so the ${what} was blocked; fix the guardrail: it must return { action: "allow" }, { action: "redact", text } or { action: "block", reason }`;
}
