// A bench child process that reports one JSON document per stdout line
// (`postgres-child.ts`, `postgres-restart-child.ts`): spawned on the same
// runner as the bench (compiled, or under tsx), its reports kept, each
// awaited by its `type` with a timeout.

import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

/** What every report carries: its type, and why when it is `failed`. */
export interface ChildLine {
  readonly type: string;
  readonly message?: string;
}

export class JsonLinesChild<Report extends ChildLine> {
  private readonly process: ChildProcess;
  private readonly reports: Report[] = [];
  private readonly listeners = new Set<() => void>();
  private stderr = "";
  readonly exited: Promise<void>;
  /** `performance.now()` here when it was spawned. */
  readonly spawnedAt: number;

  /** `childPath` ends in `.js` when the bench runs compiled, `.ts` under tsx. */
  constructor(
    private readonly name: string,
    childPath: string,
    config: unknown,
    stdin: "pipe" | "ignore" = "pipe",
  ) {
    const runner = childPath.endsWith(".ts") ? ["--import", "tsx"] : [];
    this.spawnedAt = performance.now();
    this.process = spawn(process.execPath, [...runner, childPath, JSON.stringify(config)], { stdio: [stdin, "pipe", "pipe"] });
    createInterface({ input: this.process.stdout! }).on("line", (line) => {
      this.reports.push(JSON.parse(line) as Report);
      for (const listener of this.listeners) listener();
    });
    this.process.stderr!.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) =>
      this.process.on("exit", () => {
        for (const listener of this.listeners) listener();
        resolve();
      }),
    );
  }

  /** The child's report of this type (its `nth`, from 0, when it reports
   * the type more than once); rejects when it fails, exits or hangs. */
  report(type: Report["type"], timeoutMs: number, nth = 0): Promise<Report> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const failed = this.reports.find((report) => report.type === "failed");
        const found = this.reports.filter((report) => report.type === type)[nth];
        if (found === undefined && failed === undefined && this.process.exitCode === null && this.process.signalCode === null) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        if (found !== undefined) resolve(found);
        else reject(new Error(`bench ${this.name} ${failed?.message ?? "exited"} before reporting "${type}"${this.stderr ? `; stderr: ${this.stderr}` : ""}`));
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`bench ${this.name} did not report "${type}" within ${timeoutMs} ms; stderr: ${this.stderr}`));
      }, timeoutMs);
      this.listeners.add(check);
      check();
    });
  }

  /** A command line on the child's stdin (spawned with `stdin` "pipe"). */
  send(command: string): void {
    this.process.stdin!.write(`${command}\n`);
  }

  kill(): void {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill("SIGKILL");
  }
}
