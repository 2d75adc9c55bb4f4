// What every subcommand gets: the global options (`--store`, `--json`,
// `--debug`) and a logger that prints the runtime's warnings on stderr —
// above the progress line when one is drawn.

import pc from "./colors.js";
import type { Logger } from "../index.js";
import { oneLine } from "./errors.js";
import type { Progress } from "./progress.js";
import { STORE_DEFAULT, storeForDisplay } from "./store.js";

export interface GlobalOptions {
  readonly store: string;
  readonly json: boolean;
  readonly debug: boolean;
}

export class CliLogger implements Logger {
  /** Set while a progress display owns stderr. */
  progress: Progress | undefined;

  constructor(private readonly debugEnabled: boolean) {}

  warn(message: string): void {
    this.line(pc.yellow(`warning: ${oneLine(message)}`));
  }

  debug(message: string): void {
    if (this.debugEnabled) this.line(pc.dim(`debug: ${message}`));
  }

  /** A line on stderr, above the progress display if there is one. */
  line(text: string): void {
    if (this.progress) this.progress.log(text);
    else process.stderr.write(`${text}\n`);
  }
}

export class CliContext {
  readonly logger: CliLogger;

  constructor(readonly options: GlobalOptions) {
    this.logger = new CliLogger(options.debug);
  }

  get json(): boolean {
    return this.options.json;
  }

  /** Human narrative: stdout normally, stderr when stdout carries `--json`. */
  say(text = ""): void {
    if (this.json) process.stderr.write(`${text}\n`);
    else process.stdout.write(`${text}\n`);
  }

  /** The global options to repeat in a command the user is told to run
   * (a URL's password shown as `***`: give it in PGPASSWORD or ~/.pgpass). */
  storeArgument(): string {
    return this.options.store === STORE_DEFAULT ? "" : ` --store ${shellQuote(storeForDisplay(this.options.store))}`;
  }
}

export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}
