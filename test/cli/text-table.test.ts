// The CLI's own table and colors (issue 17: no table, color or spinner
// package in the library's install): columns line up by what a terminal
// shows — color codes take no width, wide characters two columns.

import { describe, expect, it } from "vitest";
import { stripColors } from "../../host/cli/colors.js";
import { displayWidth, table } from "../../host/cli/text-table.js";

describe("the CLI's table", () => {
  it("draws a box with the header apart and no rules between rows, padded to the widest cell", () => {
    const drawn = stripColors(
      table(
        ["execution", "state"],
        [
          ["e-1", "completed"],
          ["e-22", "\x1b[33mwaiting for approval\x1b[39m"],
        ],
      ),
    );
    expect(drawn.split("\n")).toEqual([
      "┌───────────┬──────────────────────┐",
      "│ execution │ state                │",
      "├───────────┼──────────────────────┤",
      "│ e-1       │ completed            │",
      "│ e-22      │ waiting for approval │",
      "└───────────┴──────────────────────┘",
    ]);
  });

  it("counts the columns a terminal gives a cell", () => {
    expect(displayWidth("\x1b[1mbold\x1b[22m")).toBe(4);
    expect(displayWidth("注文")).toBe(4);
    expect(displayWidth("café")).toBe(4);
    const drawn = stripColors(table(["名前", "x"], [["a", "b"]])).split("\n");
    expect(new Set(drawn.map(displayWidth)).size, "every line as wide").toBe(1);
  });
});
