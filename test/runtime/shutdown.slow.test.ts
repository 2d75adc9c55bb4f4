// No use of the public API may end the process with an unhandled rejection
// (issue 11): each scenario runs in a child process with
// `--unhandled-rejections=strict`, closes its environment while something
// is still on its way (a definition, a start, a resume, a wait, a suspended
// run …) and must exit 0.

import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runChild } from "../support/child-process.js";
import { childNodeFlags } from "../support/node-flags.js";
import { temporaryStorePath } from "./helpers.js";

const childScript = fileURLToPath(new URL("./fixtures/shutdown-child.ts", import.meta.url));

const scenarios = ["define", "start", "resume", "wait", "suspended", "close-agent", "recover", "throwing-logger"];

describe("closing the environment leaves no unhandled rejection", () => {
  it("runs its children with unhandled rejections fatal", () => {
    expect(childNodeFlags).toContain("--unhandled-rejections=strict");
  });

  it(`env.agent() then env.close() at once, and env.close() right after each of: ${scenarios.slice(1).join(", ")}`, async () => {
    const directory = dirname(await temporaryStorePath());
    const exit = await runChild(childScript, [directory, ...scenarios]);
    expect({ code: exit.code, stdout: exit.stdout, stderr: exit.stderr }).toEqual({
      code: 0,
      stdout: scenarios.map((scenario) => `closed ${scenario}\n`).join(""),
      stderr: "",
    });
  });
});
