// Terminal colors for the CLI's human output, with picocolors' rules for
// when to color (issue 17: the library installs no CLI-only packages):
// never with NO_COLOR or `--no-color`; with FORCE_COLOR or `--color`; else
// when stdout is a terminal (not TERM=dumb), or under CI. A color that is
// off returns its text unchanged.

import { isatty } from "node:tty";

type Paint = (text: string) => string;

function colorSupported(): boolean {
  const env = process.env;
  const argv = process.argv;
  if ("NO_COLOR" in env || argv.includes("--no-color")) return false;
  return "FORCE_COLOR" in env || argv.includes("--color") || process.platform === "win32" || (isatty(1) && env["TERM"] !== "dumb") || "CI" in env;
}

/** `\x1b[<open>m text \x1b[<close>m`, re-opening after a nested close. */
function painter(enabled: boolean, open: number, close: number): Paint {
  if (!enabled) return (text) => String(text);
  const opening = `\x1b[${open}m`;
  const closing = `\x1b[${close}m`;
  return (text) => {
    const value = String(text);
    const inner = value.includes(closing) ? value.split(closing).join(closing + opening) : value;
    return opening + inner + closing;
  };
}

function palette(enabled: boolean) {
  return {
    isColorSupported: enabled,
    bold: painter(enabled, 1, 22),
    dim: painter(enabled, 2, 22),
    italic: painter(enabled, 3, 23),
    red: painter(enabled, 31, 39),
    green: painter(enabled, 32, 39),
    yellow: painter(enabled, 33, 39),
    magenta: painter(enabled, 35, 39),
    cyan: painter(enabled, 36, 39),
  };
}

const pc = palette(colorSupported());
export default pc;

/** Text without its color codes (widths of table cells). */
export function stripColors(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;]*m/g, "");
}
