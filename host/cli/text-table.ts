// The CLI's tables (`ls`, `recover`): a box-drawn grid with a bold header
// and no rules between body rows, as cli-table3's compact style drew them
// (issue 17: no table package in the library's install). Widths are those
// of the text a terminal shows: color codes take none, East Asian wide
// characters and emoji two columns.

import pc, { stripColors } from "./colors.js";

export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [head, ...rows];
  const widths = head.map((_, column) => Math.max(...all.map((row) => displayWidth(row[column] ?? ""))));
  const rule = (left: string, middle: string, right: string): string => left + widths.map((width) => "─".repeat(width + 2)).join(middle) + right;
  const line = (cells: readonly string[]): string => `│${widths.map((width, column) => ` ${pad(cells[column] ?? "", width)} `).join("│")}│`;
  return [rule("┌", "┬", "┐"), line(head.map((title) => pc.bold(title))), rule("├", "┼", "┤"), ...rows.map(line), rule("└", "┴", "┘")].join("\n");
}

function pad(cell: string, width: number): string {
  return cell + " ".repeat(Math.max(0, width - displayWidth(cell)));
}

/** Columns a terminal gives `text`. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const character of stripColors(text)) {
    const code = character.codePointAt(0)!;
    if (code < 0x20 || (code >= 0x7f && code < 0xa0) || (code >= 0x300 && code <= 0x36f) || code === 0x200d || (code >= 0xfe00 && code <= 0xfe0f)) continue;
    width += isWide(code) ? 2 : 1;
  }
  return width;
}

function isWide(code: number): boolean {
  return (
    (code >= 0x1100 && code <= 0x115f)
    || (code >= 0x2e80 && code <= 0xa4cf && code !== 0x303f)
    || (code >= 0xac00 && code <= 0xd7a3)
    || (code >= 0xf900 && code <= 0xfaff)
    || (code >= 0xfe30 && code <= 0xfe4f)
    || (code >= 0xff00 && code <= 0xff60)
    || (code >= 0xffe0 && code <= 0xffe6)
    || (code >= 0x1f300 && code <= 0x1f64f)
    || (code >= 0x1f900 && code <= 0x1f9ff)
    || (code >= 0x20000 && code <= 0x3fffd)
  );
}
