#!/usr/bin/env node
// The `phronomy` command in the source tree (`npm run phronomy -- …`, or
// `node host/cli/bin.js …`): registers tsx, so the CLI's TypeScript sources
// — and agent modules written in TypeScript — load as they are. The built
// package runs `dist/host/cli/cli.js` instead (package.json `bin`).

import { register } from "tsx/esm/api";

register();
const { runCli } = await import("./main.ts");
await runCli(process.argv);
