// SQL literals for the statements the group commit sends as one simple
// query (`group-commit.ts`): the simple query protocol carries several
// statements in one round trip but no parameters, so values are written
// into the text here, and only here.
//
// Rules kept here:
// * Text is quoted the way `pg`'s own `escapeLiteral` does it: quotes and
//   backslashes doubled, and an `E''` literal when a backslash occurs, so the
//   result is the same whatever `standard_conforming_strings` says.
// * Numbers must be safe integers (the columns are bigint): anything else is
//   refused with an error naming the value, never rounded.
// * Arrays are `ARRAY[…]::type[]`, typed even when empty.
// * An identifier (the schema's name) is always double-quoted.

import { InvalidInputError } from "../../errors.js";

/** `name` as a quoted SQL identifier (a schema name): double quotes
 * doubled, so a reserved word or any name stays one identifier. */
export function quotedIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export function text(value: string): string {
  const quoted = value.includes("'") ? value.replace(/'/g, "''") : value;
  return value.includes("\\") ? ` E'${quoted.replace(/\\/g, "\\\\")}'` : `'${quoted}'`;
}

export function integer(value: number, what: string): string {
  if (!Number.isSafeInteger(value)) throw new InvalidInputError(`${what} must be an integer, got ${String(value)}`);
  return String(value);
}

export function textArray(values: readonly string[]): string {
  return `ARRAY[${values.map(text).join(",")}]::text[]`;
}

export function bigintArray(values: readonly number[], what: string): string {
  return `ARRAY[${values.map((value) => integer(value, what)).join(",")}]::bigint[]`;
}

/** `sql` with its `$n` placeholders replaced by the literals of `values`
 * (text, safe integers, text arrays, integer arrays), to send as one simple query: one
 * message, one write, where a parameterized query costs five (Parse, Bind,
 * Describe, Execute, Sync, each its own write in `pg`). For the store's own
 * fixed statements, whose text holds no `$n` but placeholders. */
export function bind(sql: string, values: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, index: string) => literal(values[Number(index) - 1], `$${index}`));
}

function literal(value: unknown, what: string): string {
  if (typeof value === "string") return text(value);
  if (typeof value === "number") return integer(value, what);
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) return textArray(value as string[]);
  // An empty array is taken as text[] above; a cast in the statement types it.
  if (Array.isArray(value) && value.every((item) => typeof item === "number")) return bigintArray(value as number[], what);
  throw new InvalidInputError(`${what} must be a string, an integer or an array of strings or integers, got ${JSON.stringify(value)}`);
}
