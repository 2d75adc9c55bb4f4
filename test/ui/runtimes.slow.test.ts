// The dashboard's handler is a standard `(Request) => Promise<Response>`:
// served by Bun.serve and Deno.serve (test/ui/serve-on-runtime.ts, run from
// the sources) as by node:http, it answers a page with its token and
// refuses one without it and an action from another origin.

import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { repositoryRoot } from "../cli/helpers.js";
import { ended, openFixture } from "./fixture.js";

const run = promisify(execFile);
const script = join(repositoryRoot, "test/ui/serve-on-runtime.ts");
const commands: Readonly<Record<string, readonly string[]>> = {
  bun: [join(repositoryRoot, "node_modules/.bin/bun"), script],
  deno: [join(repositoryRoot, "node_modules/.bin/deno"), "run", "-A", "--unstable-sloppy-imports", "--node-modules-dir=manual", script],
};

it.each(Object.keys(commands))(
  "serves under %s",
  async (name) => {
    const fixture = await openFixture();
    try {
      const executionId = await fixture.start("hello");
      await fixture.until(executionId, ended);
      const [command, ...args] = commands[name]!;
      const { stdout } = await run(command!, [...args, fixture.environment.store.path], { cwd: repositoryRoot, timeout: 60_000 });
      const line = stdout.split("\n").find((candidate) => candidate.startsWith("CHECK "));
      expect(JSON.parse(line!.slice("CHECK ".length))).toEqual({ runtime: name, page: 200, listed: true, withoutToken: 403, crossSite: 403 });
    } finally {
      await fixture.close();
    }
  },
  90_000,
);
