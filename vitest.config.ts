import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const source = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

// Two sets of tests (issue 25): `npm test` runs the fast one, `npm run
// test:slow` the slow one, `npm run test:all` and CI (.ci/run) both.
//
// The rule: a test file is slow when it starts another process (a child
// Node, the CLI, a coordinator, a browser, Bun or Deno, npm, gcc, TypeDoc),
// kills one, mounts a file system, needs the npm registry, or runs longer
// than about 10 s on its own; it is named `*.slow.test.ts`. Two folders are
// slow as a whole, by what they are for: test/crash (kill -9 of child
// processes) and test/package (the packed package installed and run on
// every runtime). Everything else runs inside the vitest worker, PostgreSQL
// included (a server is on every machine the tests run on, README), and
// must stay quick enough for the fast set to finish in under 5 minutes on
// 2 cores.
const slowFiles = ["test/crash/**/*.test.ts", "test/package/**/*.test.ts", "test/**/*.slow.test.ts"];

// The fast set runs in two projects. Most files share their worker's module
// cache (`isolate: false`): a file then imports only itself, not the host,
// the AI SDK and the compiled core again (that import was 160 s of the fast
// set's 940 s of work, issue 25). A shared helper therefore registers its
// per-test cleanup with test/support/cleanups.ts, not as a top-level hook,
// and a file must leave no process-wide change behind. The files below
// replace a module the host imports (`vi.mock("node:crypto")`, the ids a
// seed replays by) or check what a fresh process has not loaded yet (the
// OpenTelemetry API), which only works on a fresh module graph: they keep
// their isolation, in "fast-isolated".
const isolatedFastFiles = ["test/sim/sim.test.ts", "test/fuzz/host-effects.test.ts", "test/runtime/tracing-lazy.test.ts", "test/agent/direct-call.test.ts"];

export default defineConfig({
  // The package's own name, as the examples import it (tsconfig.json `paths`):
  // the sources (docs/decisions/0046).
  resolve: {
    alias: [
      { find: /^phronomy$/, replacement: source("./host/index.ts") },
      { find: /^phronomy\/testing$/, replacement: source("./host/testing.ts") },
      { find: /^phronomy\/ui$/, replacement: source("./host/ui/index.ts") },
      { find: /^phronomy\/chat$/, replacement: source("./host/chat/index.ts") },
    ],
  },
  test: {
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // An unhandled rejection anywhere fails the run: the worker processes
    // raise it as an uncaught exception (issue 11; child processes the tests
    // spawn get the same flag, see test/support/node-flags.ts).
    execArgv: ["--unhandled-rejections=strict"],
    // The SQLite store's worker, bundled once per run into plain JavaScript:
    // started from the sources, each worker would load tsx first, seconds
    // per store opened (test/support/store-worker-bundle.ts).
    globalSetup: ["test/support/store-worker-bundle.ts"],
    // The shared helpers' cleanups, hooked into every file (cleanups.ts).
    setupFiles: ["test/support/cleanup-hooks.ts"],
    projects: [
      // Two files at once even on 2 cores (vitest's default there is one):
      // a fast file mostly waits on its store worker's start and on fsync.
      // Run together (`npm run test:all`, a filter naming both), the fast
      // set goes first: vitest needs each project with its own worker count
      // in a group of its own.
      {
        extends: true,
        test: {
          name: "fast",
          include: ["test/**/*.test.ts"],
          exclude: [...slowFiles, ...isolatedFastFiles],
          isolate: false,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: "fast-isolated", include: isolatedFastFiles, maxWorkers: 2, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: "slow", include: slowFiles, sequence: { groupOrder: 1 } } },
    ],
  },
});
