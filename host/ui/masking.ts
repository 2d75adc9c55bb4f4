// What the dashboard never shows in full: values under secret-looking
// field names, and — wherever they occur, whatever the field — values that
// look like secrets by their shape (docs/decisions/0082):
// * a payment card number: 13 to 19 digits (spaces or dashes between
//   groups allowed) that pass the Luhn check, shown as its last four
//   digits (what a receipt shows); the check keeps order numbers and
//   timestamps visible.
// * an HTTP bearer or basic credential (`Bearer …`, `Basic …`).
// * a key or token of a well-known shape: OpenAI and Anthropic style
//   `sk-…`, Stripe `sk_live_…`/`rk_live_…`, GitHub `ghp_…`/`github_pat_…`,
//   Slack `xox…-`, AWS access key ids `AKIA…`, Google `AIza…`, and JSON
//   Web Tokens (`eyJ….eyJ….…`).
// Masking is for the screen only: the store keeps what it was given, and
// `phronomy show --json` prints it whole to whoever may read the store.

import type { Json } from "../index.js";

/** Object keys whose values are never shown (an API key or password that
 * reached a tool argument or a stored error's details). */
const secretKey = /^(api[_-]?key|password|passwd|secret|client[_-]?secret|authorization|access[_-]?token|refresh[_-]?token)$/i;

const cardCandidate = /\b\d(?:[ -]?\d){12,18}\b/g;
const credential = /\b(Bearer|Basic)\s+[A-Za-z0-9\-._~+/]{8,}=*/gi;
const knownKey =
  /\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})\b/g;

/** `text` with card numbers, credentials and well-known keys masked. */
export function maskText(text: string): string {
  return text
    .replace(knownKey, "***")
    .replace(credential, (_, scheme: string) => `${scheme} ***`)
    .replace(cardCandidate, (candidate) => {
      const digits = candidate.replace(/[ -]/g, "");
      return luhnValid(digits) ? `card ***${digits.slice(-4)}` : candidate;
    });
}

/** The value with secret-named fields and secret-shaped strings masked. */
export function masked(value: Json): Json {
  if (typeof value === "string") return maskText(value);
  if (Array.isArray(value)) return value.map(masked);
  if (value === null || typeof value !== "object") return value;
  const copy: { [key: string]: Json } = {};
  for (const [key, entry] of Object.entries(value)) copy[key] = secretKey.test(key) ? "***" : masked(entry);
  return copy;
}

function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48;
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}
