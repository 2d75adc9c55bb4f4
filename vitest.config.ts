import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const source = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  // The package's own name, as the examples import it (tsconfig.json `paths`):
  // the sources (docs/decisions/0046).
  resolve: {
    alias: [
      { find: /^phronomy$/, replacement: source("./host/index.ts") },
      { find: /^phronomy\/testing$/, replacement: source("./host/testing.ts") },
      { find: /^phronomy\/ui$/, replacement: source("./host/ui/index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // An unhandled rejection anywhere fails the run: the worker processes
    // raise it as an uncaught exception (issue 11; child processes the tests
    // spawn get the same flag, see test/support/node-flags.ts).
    execArgv: ["--unhandled-rejections=strict"],
  },
});
