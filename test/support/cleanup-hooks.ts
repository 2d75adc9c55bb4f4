// Vitest setup file (vitest.config.ts `setupFiles`), run before every test
// file, isolated or not: hooks the cleanups the shared helpers registered
// (cleanups.ts) into the file about to run.

import { afterAll, afterEach } from "vitest";
import { runFileCleanups, runTestCleanups } from "./cleanups.js";

afterEach(runTestCleanups);
afterAll(runFileCleanups);
