// The shell samples of the documentation (docs/decisions/0046). Every
// `phronomy …` command line in a shell block of README.md, docs/cli.md and
// docs/runtimes.md — and `npm run phronomy -- …`, `npm run demo -- …` —
// is parsed by the CLI's own parser with its actions stubbed out: the
// subcommand exists, its options and their choices are accepted, the
// arguments it needs are there. What each command then does is test/cli's.
// Every subcommand is shown at least once. The runtime command lines of
// docs/runtimes.md are the ones the packed-package suite runs
// (test/package/), and every other shell line is one of the kinds
// decision 0046 lists, each with the test that covers it.

import { describe, expect, it } from "vitest";
import { commandLineParser } from "../../host/cli/main.js";
import { runtimes } from "../package/packed-project.js";
import { blocksOf, documents, isShell, type Block } from "./samples.js";

interface CommandLine {
  readonly where: string;
  readonly words: readonly string[];
}

/** The words of a shell line: quotes kept together, `<placeholders>` as one
 * word, `[optional]` brackets dropped, a `#` comment cut; `&&`, `;` and `|`
 * split it into commands. */
function commandsOf(line: string): string[][] {
  const commands: string[][] = [[]];
  let word: string | undefined;
  let quote: string | undefined;
  const text = line.replace(/<[^>]*>/g, "PLACEHOLDER");
  const end = (): void => {
    if (word !== undefined) commands.at(-1)!.push(word);
    word = undefined;
  };
  for (let index = 0; index < text.length; index++) {
    const character = text[index]!;
    if (quote !== undefined) {
      if (character === quote) quote = undefined;
      else word = (word ?? "") + character;
    } else if (character === "'" || character === '"') {
      quote = character;
      word ??= "";
    } else if (/\s|\[|\]/.test(character)) {
      end();
    } else if (character === "#" && word === undefined) {
      break;
    } else if (character === "&" || character === ";" || character === "|") {
      end();
      if (commands.at(-1)!.length > 0) commands.push([]);
      if (text[index + 1] === character) index++;
    } else {
      word = (word ?? "") + character;
    }
  }
  end();
  return commands.filter((command) => command.length > 0);
}

/** Each command of each shell block, its continuation lines joined, its
 * leading `NAME=value` assignments dropped. */
function shellCommands(block: Block): CommandLine[] {
  const logical = block.text.replace(/\\\n\s*/g, " ").split("\n");
  return logical
    .flatMap((line, index) =>
      commandsOf(line.replace(/^\$ /, "")).map((words) => {
        const start = words.findIndex((word) => !/^[A-Z_]+=/.test(word));
        return { where: `${block.document}:${block.line + 1 + index}`, words: words.slice(start) };
      }),
    )
    .filter((command) => command.words.length > 0);
}

/** The arguments of a `phronomy` invocation, or undefined for another command. */
function phronomyArguments(words: readonly string[]): string[] | undefined {
  const [first, second, third] = words;
  const after = (marker: string) => (words.includes(marker) ? words.slice(words.indexOf(marker) + 1) : []);
  if (first === "phronomy" || (first === "npx" && second === "phronomy")) return words.slice(first === "npx" ? 2 : 1);
  if (first === "npm" && second === "run" && third === "phronomy") return after("--");
  if (first === "npm" && second === "run" && third === "demo") return ["demo", ...after("--")];
  if (first === "node" && second === "host/cli/bin.js") return words.slice(2);
  return undefined;
}

/** The other kinds of shell line, and what checks them (decision 0046). */
const otherKinds: readonly [RegExp, string][] = [
  [
    /^npm install( phronomy ai)?$/,
    "installs: run as written, the agent after them (test/package/documented-lines.test.ts); the repository's `npm install` is CI's `npm ci`",
  ],
  [/^bun add phronomy ai$/, "Bun's install: run as written, `bun agent.ts` after it (test/package/documented-lines.test.ts)"],
  [/^npm test$/, "the fast set: CI (.ci/run) runs it, then the slow set (vitest.config.ts)"],
  [
    /^npx -p phronomy -p ai@7 phronomy demo$/,
    "the command the demo names when `ai` is missing (test/cli/demo.slow.test.ts; run by test/package/documented-lines.test.ts)",
  ],
  [/^mkdir -p data$/, "the examples' data directory, made by the tests that run them"],
  [
    /^(node agent\.mjs|npx tsx agent\.ts|bun agent\.ts|deno run .* agent\.ts)$/,
    "examples/agent.ts run as written after each install (test/package/documented-lines.test.ts)",
  ],
  [/^export PHRONOMY_STORE=\S+ PGPASSWORD=\S+$/, "an environment for the commands after it"],
];

const blocks = documents.flatMap(blocksOf).filter(isShell);
const commands = blocks.flatMap(shellCommands);
const invocations = commands.flatMap((command) => {
  const args = phronomyArguments(command.words);
  return args === undefined ? [] : [{ where: command.where, args }];
});

describe("the documentation's shell samples", () => {
  it("show command lines", () => {
    expect(invocations.length).toBeGreaterThan(20);
  });

  for (const { where, args } of invocations) {
    it(`${where}: phronomy ${args.join(" ")} parses`, async () => {
      const parser = commandLineParser();
      await expect(parser.parseAsync(args, { from: "user" }).then(() => "parsed")).resolves.toBe("parsed");
    });
  }

  it("every subcommand is shown at least once", () => {
    const shown = new Set(invocations.map(({ args }) => args.find((word) => !word.startsWith("-"))));
    const subcommands = commandLineParser().commands.map((command) => command.name());
    expect(subcommands.filter((name) => !shown.has(name))).toEqual([]);
  });

  it("every other shell line is a kind the decision names", () => {
    const others = commands
      .filter((command) => phronomyArguments(command.words) === undefined)
      .map((command) => ({ where: command.where, line: command.words.join(" ") }));
    expect(others.filter(({ line }) => !otherKinds.some(([pattern]) => pattern.test(line)))).toEqual([]);
  });

  it("docs/runtimes.md runs Deno with the permissions the packed suite runs it with", () => {
    const deno = commands.find((command) => command.where.startsWith("docs/runtimes.md") && command.words[0] === "deno" && command.words.at(-1) === "agent.ts");
    expect(deno?.words.slice(1, -1)).toEqual([...runtimes.deno.arguments]);
  });
});
