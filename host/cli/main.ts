// The `phronomy` command (docs/cli.md): subcommands and options, parsed by
// commander, each handed to its module in `commands/`. Everything that goes
// wrong ends here as one line on stderr — `phronomy: [CODE] message` — and
// a non-zero exit code (`ExitCode`), plus `{ "error": … }` on stdout with
// `--json` and the stack with `--debug`.

import { cliDocsPath } from "./docs-path.js";
import { readFileSync } from "node:fs";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import pc from "./colors.js";
import { CliContext } from "./context.js";
import { CliError, ExitCode, debugText, exitCodeOf, reportedError, type ExitCodeValue } from "./errors.js";
import { printJson } from "./format.js";
import { API_KEY_VARIABLE, BASE_URL_VARIABLE, MODEL_VARIABLE } from "./models.js";
import { STORE_DEFAULT, STORE_VARIABLE, storeForDisplay } from "./store.js";

// Each command's module is imported when the command runs: a CLI that
// starts in half a second beats one that loads every provider first.
const commands = {
  run: () => import("./commands/run.js"),
  ls: () => import("./commands/ls.js"),
  show: () => import("./commands/show.js"),
  decide: () => import("./commands/decide.js"),
  recover: () => import("./commands/recover.js"),
  prune: () => import("./commands/prune.js"),
  cancel: () => import("./commands/cancel.js"),
  retry: () => import("./commands/retry.js"),
  demo: () => import("./commands/demo.js"),
  signal: () => import("./commands/signal.js"),
  schedules: () => import("./commands/schedules.js"),
  ui: () => import("./commands/ui.js"),
};

/** `ls --status` values (kept here so parsing needs no command module). */
const LIST_FILTERS = ["preparing", "active", "suspended", "terminal", "queued", "completed", "failed", "handed_off", "coordination_wait"];
const LIST_LIMIT_MAX = 1_000;

const helpAfter = `
Environment:
  ${STORE_VARIABLE}      the store when --store is not given (default ${STORE_DEFAULT}): a path or a postgres:// URL
  ${MODEL_VARIABLE}      the model when --model is not given (openai-compatible:<model>)
  ${BASE_URL_VARIABLE}   the model endpoint when --base-url is not given
  ${API_KEY_VARIABLE}    the model endpoint's API key (sent as a Bearer token)

Exit codes:
  0    done; the execution completed (or handed off)
  1    the execution failed, or the command could not do its job
  2    bad arguments
  3    the execution is waiting: for an approval, a value, an event, a timer or a child
  130  Ctrl-C cancelled the execution

Docs: ${cliDocsPath()}`;

/** Runs the command and exits the process with its code (the launchers'
 * entry: `bin.js` in the source tree, `cli.ts` in the built package). */
export async function runCli(argv: readonly string[]): Promise<never> {
  let finished = false;
  // The event loop emptied while the command still waited: something it
  // awaited can no longer settle. Say so in one line instead of Node's
  // bare exit code 13 ("unsettled top-level await").
  process.on("beforeExit", () => {
    if (finished) return;
    process.stderr.write(
      "phronomy: [INTERNAL] the command stopped while still waiting for an operation that can no longer finish; rerun it with --debug and report this\n",
    );
    process.exit(ExitCode.failure);
  });
  const code = await main(argv);
  finished = true;
  process.exit(code);
}

/** Parses the arguments, runs the subcommand, returns the exit code. */
export async function main(argv: readonly string[]): Promise<ExitCodeValue> {
  let exitCode: ExitCodeValue = ExitCode.ok;
  let context: CliContext | undefined;
  const contextOf = (command: Command): CliContext => {
    const options = command.optsWithGlobals<{ store: string; json?: boolean; debug?: boolean }>();
    context = new CliContext({ store: options.store, json: options.json === true, debug: options.debug === true });
    return context;
  };
  const program = programOf((command, body) => {
    exitCode = 0;
    // Before a peer or a store is looked at: on an old Node that is the one thing to fix.
    return import("../index.js")
      .then(({ checkSupportedRuntime }) => checkSupportedRuntime())
      .then(() => body(contextOf(command)))
      .then((code) => {
        exitCode = code;
      });
  });
  try {
    await program.parseAsync([...argv]);
    return exitCode;
  } catch (error) {
    const asked = { json: argv.includes("--json"), debug: argv.includes("--debug") };
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version") return ExitCode.ok;
      if (error.code === "commander.help") return ExitCode.usage;
      const usage = new CliError("USAGE", error.message.replace(/^error: /, ""));
      reportFailure(usage, asked);
      return ExitCode.usage;
    }
    reportFailure(error, context ? context.options : asked);
    return exitCodeOf(error);
  }
}

type Runner = (command: Command, body: (context: CliContext) => Promise<ExitCodeValue>) => Promise<void>;

/** The command line with every action a no-op: parsing alone checks the
 * subcommand, its options, their choices and the arguments it needs (the
 * documentation's command lines are checked so, test/docs/cli-samples.test.ts). */
export function commandLineParser(): Command {
  return programOf(async () => undefined);
}

function programOf(run: Runner): Command {
  const program = new Command("phronomy")
    .description("Durable executions of LLM agents: run them, inspect them, approve, recover.")
    .version(packageVersion(), "-V, --version")
    .addOption(storeOption())
    .option("--json", "machine-readable output on stdout")
    .option("--debug", "stack traces with errors")
    .option("--no-color", "no colors (NO_COLOR=1 works too)")
    .exitOverride()
    .configureOutput({ outputError: () => undefined })
    .showSuggestionAfterError(true)
    .addHelpText("after", helpAfter);

  const modelOptions = (command: Command) =>
    command
      .option("--model <provider:model>", `a real model: openai-compatible:<model> (or ${MODEL_VARIABLE})`)
      .option("--base-url <url>", `the OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (or ${BASE_URL_VARIABLE})`);

  modelOptions(
    program
      .command("run")
      .description("run one execution of an agent module and print its result")
      .argument("<agent-module>", "a .ts or .js module whose default export is the agent (see Docs below)")
      .argument("[input]", "the request to the agent; - reads it from stdin"),
  )
    .option("--stream", "stream the model's text to stdout as it arrives")
    .option("--timeout <ms>", "end the execution with TIMEOUT after this many milliseconds", positiveInteger)
    .addOption(new Option("--approval-policy <policy>", "which tool calls wait for approval").choices(["tools", "always", "never"]))
    .action((modulePath: string, input: string | undefined, options, command: Command) =>
      run(command, async (context) => (await commands.run()).runCommand(context, modulePath, input, options)),
    );

  program
    .command("ls")
    .description("list executions, newest first")
    .addOption(new Option("--status <status>", "only executions with this status or outcome").choices(LIST_FILTERS))
    .option("--agent <id>", "only this agent's executions")
    .option("--definition <name>", "only executions of conversations of this named agent (env.agent({ name }))")
    .option("--limit <n>", `at most this many (default 50, at most ${LIST_LIMIT_MAX}; 200 with --search)`, positiveInteger)
    .option("--search <words>", "only executions whose input or output has words starting with each of these")
    .action((options, command: Command) => run(command, async (context) => (await commands.ls()).lsCommand(context, options)));

  program
    .command("show")
    .description("an execution and its durable timeline")
    .argument("<execution-id>", "the execution (or a unique prefix of its id)")
    .action((executionId: string, _options, command: Command) => run(command, async (context) => (await commands.show()).showCommand(context, executionId)));

  for (const approved of [true, false]) {
    const command = program
      .command(approved ? "approve" : "reject")
      .description(
        approved
          ? "approve an execution's pending approval (as asked, with edited arguments, or answered in place of the tool) and run it to its outcome"
          : "decline an execution's pending approval (the model is told) and run it to its outcome",
      )
      .argument("<execution-id>", "the suspended execution (or a unique prefix of its id)")
      .option("--reason <text>", approved ? "recorded with the decision" : "told to the model and recorded")
      .option("--approval-id <id>", "decide only if this is the pending approval");
    if (approved) {
      command
        .option("--input <json>", "run the call with these arguments instead of the model's (checked against the tool's input schema)")
        .option("--respond <json>", "do not run the call: this is its result (checked against the tool's output schema)")
        .option("--call <id>", "the call --input or --respond is for, when the approval covers several");
    }
    modelOptions(
      command
        .option("--by <who>", "who decided (recorded with the decision)")
        .option("--agent-module <path>", "the module defining the execution's agent (not needed for the demo's)"),
    ).action((executionId: string, options, command: Command) =>
      run(command, async (context) => (await commands.decide()).decideCommand(context, executionId, approved ? "approve" : "reject", options)),
    );
  }

  modelOptions(
    program
      .command("resume")
      .description("give an execution's typed wait (a humanInput() call) its value and run it to its outcome")
      .argument("<execution-id>", "the suspended execution (or a unique prefix of its id)")
      .requiredOption("--value <json>", "the value the wait asks for (checked against its response schema)")
      .option("--wait-id <id>", "answer only if this is the pending wait")
      .option("--call <id>", "the call the value is for")
      .option("--by <who>", "who answered (recorded with the decision)")
      .option("--agent-module <path>", "the module defining the execution's agent"),
  ).action((executionId: string, options: { waitId?: string }, command: Command) =>
    run(command, async (context) =>
      (await commands.decide()).decideCommand(context, executionId, "resume", {
        ...options,
        ...(options.waitId !== undefined ? { approvalId: options.waitId } : {}),
      }),
    ),
  );

  modelOptions(
    program
      .command("fire")
      .description("fire an execution's timer (or the deadline of its wait) now, instead of at its due time, and run it to its outcome")
      .argument("<execution-id>", "the suspended execution (or a unique prefix of its id)")
      .option("--wait <id>", "fire only if this is the pending wait")
      .option("--by <who>", "who fired it (recorded with the decision)")
      .option("--agent-module <path>", "the module defining the execution's agent"),
  ).action((executionId: string, options: { wait?: string }, command: Command) =>
    run(command, async (context) =>
      (await commands.decide()).decideCommand(context, executionId, "fire", {
        ...options,
        ...(options.wait !== undefined ? { approvalId: options.wait } : {}),
      }),
    ),
  );

  modelOptions(
    program
      .command("signal")
      .description("send an event to the wait keyed on it (a waitForEvent() call), as the application's env.signal does, and run it to its outcome")
      .argument("<key>", "the event's key, as the wait names it")
      .option("--payload <json>", "the event's payload (checked against the wait's schema; default null)")
      .option("--if-waiting", "refuse when no wait has the key now, instead of keeping the event for the next one")
      .option("--keep-for <duration>", "how long an event no wait takes yet is kept: 30d at most, e.g. 12h (default 1d)")
      .option("--agent-module <path>", "the module defining the waiting execution's agent (not needed beside a live owner)"),
  ).action((key: string, options, command: Command) => run(command, async (context) => (await commands.signal()).signalCommand(context, key, options)));

  const schedules = program
    .command("schedules")
    .description("scheduled starts of conversations (agent.schedule): list them, show one, cancel one, run one now");
  schedules
    .command("list", { isDefault: true })
    .description("list schedules, newest first (the default)")
    .option("--agent <id>", "only this conversation's schedules")
    .option("--definition <name>", "only schedules of conversations of this named agent")
    .addOption(new Option("--state <state>", "only schedules in this state").choices(["active", "cancelled", "done"]))
    .option("--limit <n>", `at most this many (default 50, at most ${LIST_LIMIT_MAX})`, positiveInteger)
    .action((options, command: Command) => run(command, async (context) => (await commands.schedules()).schedulesListCommand(context, options)));
  schedules
    .command("show")
    .description("one schedule: its timing, next run, last firing and the input it starts with")
    .argument("<schedule-id>", "the schedule's id")
    .action((scheduleId: string, _options, command: Command) =>
      run(command, async (context) => (await commands.schedules()).scheduleShowCommand(context, scheduleId)),
    );
  schedules
    .command("cancel")
    .description("cancel a schedule: it fires no more (a firing under way still starts once)")
    .argument("<schedule-id>", "the schedule's id")
    .action((scheduleId: string, _options, command: Command) =>
      run(command, async (context) => (await commands.schedules()).scheduleActionCommand(context, scheduleId, "cancel")),
    );
  schedules
    .command("run")
    .description("fire an active schedule now (its next slot is kept) and print the execution it started")
    .argument("<schedule-id>", "the schedule's id")
    .option(
      "--wait <ms>",
      "beside a live owner (or on PostgreSQL), how long to wait for the process that fires it (default 10000; 0: answer once claimed)",
      wholeNumber,
    )
    .action((scheduleId: string, options: { wait?: number }, command: Command) =>
      run(command, async (context) => (await commands.schedules()).scheduleActionCommand(context, scheduleId, "run", options.wait)),
    );

  program
    .command("cancel")
    .description("cancel an execution by id (running: after its work in flight; suspended: at once) and print how it ended")
    .argument("<execution-id>", "the execution (or a unique prefix of its id)")
    .option("--reason <text>", "recorded with the cancellation")
    .action((executionId: string, options, command: Command) =>
      run(command, async (context) => (await commands.cancel()).cancelCommand(context, executionId, options)),
    );

  modelOptions(
    program
      .command("retry")
      .description("continue a failed, timed-out or cancelled execution from its last durable step as a new attempt")
      .argument("<execution-id>", "the execution (or a unique prefix of its id)")
      .option("--agent-module <path>", "the module defining the execution's agent (not needed for the demo's)"),
  ).action((executionId: string, options, command: Command) =>
    run(command, async (context) => (await commands.retry()).retryCommand(context, executionId, options)),
  );

  modelOptions(
    program
      .command("recover")
      .description("recover unfinished executions and report what was resolved and what needs attention")
      .option("--agent-module <path>", "a module defining an agent to recover (repeatable)", collect, [] as string[]),
  ).action((options, command: Command) => run(command, async (context) => (await commands.recover()).recoverCommand(context, options)));

  program
    .command("prune")
    .description("delete finished executions (their timelines too; conversations keep their memory) and say what was removed")
    .option("--older-than <duration>", "finished more than this long ago: 7d, 12h, 30m, 45s, 500ms (default: the retention, 7d)")
    .option("--agent <id>", "only this agent's executions")
    .action((options, command: Command) => run(command, async (context) => (await commands.prune()).pruneCommand(context, options)));

  program
    .command("ui")
    .description("a dashboard in the browser: watch executions live, approve, reject, cancel, retry, recover (until Ctrl-C)")
    .option("--host <address>", "the address to listen on (default 127.0.0.1: this machine only)")
    .option("--port <n>", "the port (default: a free one)", port)
    .action((options, command: Command) => run(command, async (context) => (await commands.ui()).uiCommand(context, options)));

  program
    .command("demo")
    .description("a support agent that asks approval for a refund, pauses, is approved and answers (no key, no network)")
    .option("--crash", "kill the approving process after the refund's barrier, then recover it")
    .option("--ui", "approve the refund in the dashboard (a browser page) instead; Ctrl-C stops it")
    .addOption(new Option("--crash-child").hideHelp())
    .action((options, command: Command) => run(command, async (context) => (await commands.demo()).demoCommand(context, options)));

  for (const command of [...program.commands, ...schedules.commands])
    command
      .exitOverride()
      .configureOutput({ outputError: () => undefined })
      .showSuggestionAfterError(true);
  return program;
}

/** `--store`: its default (PHRONOMY_STORE) is shown without a password. */
function storeOption(): Option {
  const store = process.env[STORE_VARIABLE] ?? STORE_DEFAULT;
  return new Option(
    "--store <path-or-url>",
    "the store: a SQLite file path, or a postgres://user@host:5432/db?schema=name URL (its password is never printed; PGPASSWORD works)",
  ).default(store, JSON.stringify(storeForDisplay(store)));
}

function reportFailure(error: unknown, options: { readonly json: boolean; readonly debug: boolean }): void {
  const reported = reportedError(error);
  process.stderr.write(`${pc.red("phronomy:")} [${reported.code}] ${reported.message}\n`);
  if (options.debug) process.stderr.write(`${debugText(error)}\n`);
  if (options.json) printJson({ error: reported });
}

function wholeNumber(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed)) throw new InvalidArgumentError("it must be a whole number");
  return parsed;
}

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed < 1) throw new InvalidArgumentError("it must be a positive integer");
  return parsed;
}

function port(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed > 65_535) throw new InvalidArgumentError("it must be a port number from 0 to 65535");
  return parsed;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** The version in package.json: two levels up in the source tree
 * (`host/cli/`), three in the built package (`dist/host/cli/`). */
function packageVersion(): string {
  for (const relative of ["../../package.json", "../../../package.json"]) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(relative, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (manifest.name === "phronomy" && manifest.version) return manifest.version;
    } catch {
      // not there: try the next place
    }
  }
  return "0.0.0";
}
