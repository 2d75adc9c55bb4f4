import { defineConfig } from "vitest/config";

export default defineConfig({
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
