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

import { InvalidInputError } from "../../errors.js";

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
