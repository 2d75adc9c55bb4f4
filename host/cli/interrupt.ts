// Ctrl-C while a command runs an execution. The first SIGINT aborts the
// execution's AbortSignal: the runtime aborts what is in flight, waits for
// it to settle, and commits the terminal `cancelled` — the command then
// closes the store cleanly and exits 130. A second SIGINT exits at once,
// without waiting: the execution is then left unfinished in the store and
// the next `phronomy recover` (or run of its agent) continues it.

import { ExitCode } from "./errors.js";

export class Interrupt {
  readonly controller = new AbortController();
  private count = 0;
  private readonly handler = () => this.received();

  constructor(
    /** Told on the first Ctrl-C (the abort is already requested). */
    private readonly onCancel: () => void,
    /** Told on the second, right before the process exits. */
    private readonly onExit: () => void,
  ) {
    process.on("SIGINT", this.handler);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get interrupted(): boolean {
    return this.count > 0;
  }

  dispose(): void {
    process.off("SIGINT", this.handler);
  }

  private received(): void {
    this.count += 1;
    if (this.count === 1) {
      this.controller.abort();
      this.onCancel();
      return;
    }
    this.onExit();
    process.exit(ExitCode.interrupted);
  }
}
