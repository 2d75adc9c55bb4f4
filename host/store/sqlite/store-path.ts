// The path of a SQLite store, checked the same way by its owner
// (`open-owned.ts`) and its visitors (`sqlite-visitor.ts`).

import { resolve } from "node:path";
import { InvalidInputError } from "../../errors.js";

/** Two connections share the file, so it must be a real file: the
 * absolute path, or InvalidInputError naming what was given. */
export function checkPath(path: string): string {
  if (typeof path !== "string" || path.length === 0 || path === ":memory:" || path.startsWith("file:")) {
    throw new InvalidInputError(
      `the SQLite store needs a file path, got ${JSON.stringify(path)} (in-memory databases and URIs are not supported: use a file in a temporary directory)`,
    );
  }
  return resolve(path);
}
