// `phronomy run <agent-module> [input]`: one execution of the module's
// agent against the store, with live progress on stderr and the result on
// stdout (docs/cli.md). Exit 0 when it completes or hands off, 3 when it
// waits for approval, 1 when it fails (the typed error's code and message
// are printed), 130 when Ctrl-C cancelled it.

import { relative, isAbsolute } from "node:path";
import { text } from "node:stream/consumers";
import type { ApprovalPolicy } from "../../index.js";
import { loadAgentModule } from "../agent-module.js";
import { shellQuote, type CliContext } from "../context.js";
import { CliError, type ExitCodeValue } from "../errors.js";
import { Interrupt } from "../interrupt.js";
import { createModel, modelSettingsOf } from "../models.js";
import { reportOutcome, settle, watchRun } from "../outcome.js";
import { Progress } from "../progress.js";
import { clearRecovered } from "../recovered.js";
import { openStore, resolveStore } from "../store.js";

export interface RunOptions {
  readonly model?: string;
  readonly baseUrl?: string;
  readonly stream?: boolean;
  readonly timeout?: number;
  readonly approvalPolicy?: ApprovalPolicy;
}

/** Inputs read from stdin (`-`) longer than this are refused. */
export const stdinInputLengthMax = 1_000_000;

export async function runCommand(context: CliContext, modulePath: string, inputArgument: string | undefined, options: RunOptions): Promise<ExitCodeValue> {
  const input = await inputOf(inputArgument);
  const location = resolveStore(context.options.store, { mustExist: false });
  const model = await createModel(modelSettingsOf(options));
  const { definition } = await loadAgentModule(modulePath, { model, storePath: location.path });
  const moduleArgument = ` --agent-module ${shellQuote(displayPath(modulePath))}`;
  const environment = await openStore(location, { logger: context.logger });
  const streamed = options.stream === true && !context.json;
  const progress = new Progress(streamed ? { onText: (delta) => process.stdout.write(delta) } : {});
  context.logger.progress = progress;
  const interrupt = new Interrupt(
    () => {
      progress.setPhase("cancelling: waiting for work in flight to settle");
      progress.log("Ctrl-C: cancelling the execution (Ctrl-C again exits at once and leaves it for recovery)");
    },
    () => {
      progress.stop();
      process.stderr.write("exiting without waiting: the execution stays unfinished in the store; `phronomy recover` continues it\n");
    },
  );
  try {
    const agent = environment.agent(definition);
    progress.setPhase("recovering unfinished executions");
    await clearRecovered(context, environment, definition.id, `${moduleArgument}${context.storeArgument()}`, interrupt.signal);
    progress.setPhase("preparing");
    const watch = watchRun(progress);
    const run = agent.start(input, {
      signal: interrupt.signal,
      onEvent: watch.onEvent,
      ...(options.stream ? { stream: true } : {}),
      ...(options.timeout !== undefined ? { timeoutMs: options.timeout } : {}),
      ...(options.approvalPolicy ? { approvalPolicy: options.approvalPolicy } : {}),
    });
    void run.executionId.then(
      (id) => progress.log(`execution ${id} of agent "${definition.id}" admitted`),
      () => undefined,
    );
    const outcome = await settle(run, watch);
    return reportOutcome(context, outcome, {
      agentId: definition.id,
      progress,
      agentModuleArgument: moduleArgument,
      streamed,
      interrupted: interrupt.interrupted,
    });
  } finally {
    progress.stop();
    context.logger.progress = undefined;
    await environment.close();
    interrupt.dispose();
  }
}

async function inputOf(argument: string | undefined): Promise<string> {
  if (argument === undefined) throw new CliError("USAGE", 'missing the input: phronomy run <agent-module> "<input>" (or - to read it from stdin)');
  const input = argument === "-" ? (await text(process.stdin)).trim() : argument;
  if (input.length === 0) throw new CliError("USAGE", "the input is empty: give the agent something to do");
  if (input.length > stdinInputLengthMax) throw new CliError("USAGE", `the input is longer than ${stdinInputLengthMax} characters`);
  return input;
}

/** A module path as the user can type it from here. */
export function displayPath(path: string): string {
  if (!isAbsolute(path)) return path;
  const fromHere = relative(process.cwd(), path);
  return fromHere.startsWith("..") ? path : fromHere;
}
