// The check of an id field, shared by the operation checks
// (check-operation.ts) and the reads and prunes that take an id. It sits
// apart from check-operation.ts because that file knows every operation
// (offload-operation.ts), and pruning's operation is one of them.

import { InvalidInputError } from "../errors.js";

/** Ids are keys and appear in every error message; 200 characters is far
 * above any generated id and keeps messages and indexes small. */
export const idLengthMax = 200;

/** `value` as an id, or `InvalidInputError` naming `field`. */
export function checkId(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0 || value.length > idLengthMax) {
    throw new InvalidInputError(`${field} must be a non-empty string of at most ${idLengthMax} characters, got ${JSON.stringify(value)}`);
  }
  return value;
}
