#!/usr/bin/env node
// The `phronomy` command of the built package (`dist/host/cli/cli.js`, the
// package.json `bin`). When tsx is installed beside it, it is registered so
// that agent modules written in TypeScript load; without it, `.js` agent
// modules load and a `.ts` one fails with a line saying what to do. In the
// source tree, `bin.js` runs the same `runCli` through tsx.

try {
  const { register } = await import("tsx/esm/api");
  register();
} catch {
  // No tsx: JavaScript agent modules only.
}
const { runCli } = await import("./main.js");
await runCli(process.argv);
