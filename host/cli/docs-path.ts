// Where the command reference is on this machine: `docs/cli.md` ships in
// the package (issue 17: `--help` must point to documentation that
// exists), found beside the compiled CLI (dist/host/cli → the package's
// root) or beside the sources (host/cli → the repository's root).

import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const candidates = ["../../../docs/cli.md", "../../docs/cli.md"].map((relative) => fileURLToPath(new URL(relative, import.meta.url)));

/** The reference's absolute path, or its path in the repository if neither exists. */
export function cliDocsPath(): string {
  return candidates.find((path) => existsSync(path)) ?? "docs/cli.md";
}
