// The progress line on a terminal: a spinner frame and a status text,
// redrawn in place on stderr (issue 17: no spinner package in the
// library's install). Only `Progress` draws it, and only on a TTY.

const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const frameIntervalMs = 80;
const clearLine = "\r\x1b[2K";
const hideCursor = "\x1b[?25l";
const showCursor = "\x1b[?25h";

export class Spinner {
  text: string;
  private frame = 0;
  private readonly timer: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    text: string,
  ) {
    this.text = text;
    this.stream.write(hideCursor);
    this.render();
    this.timer = setInterval(() => {
      this.frame = (this.frame + 1) % frames.length;
      this.render();
    }, frameIntervalMs);
    this.timer.unref();
  }

  /** Draws the line (after `clear`, to put it back under new output). */
  render(): void {
    if (this.stopped) return;
    const columns = this.stream.columns ?? 80;
    const line = `${frames[this.frame]} ${this.text}`;
    this.stream.write(clearLine + (line.length > columns - 1 ? `${line.slice(0, Math.max(0, columns - 2))}…` : line));
  }

  /** Removes the line, leaving the cursor at its start. */
  clear(): void {
    if (!this.stopped) this.stream.write(clearLine);
  }

  stop(): void {
    if (this.stopped) return;
    this.clear();
    this.stopped = true;
    clearInterval(this.timer);
    this.stream.write(showCursor);
  }
}
