// Cleanups that shared test helpers need after every test or every file
// (close the stores and environments a test opened, drop its PostgreSQL
// schemas, remove its temporary directories).
//
// Why not an `afterEach` at the helper's top level: the fast set runs its
// files without isolation (vitest.config.ts), so a helper module is
// evaluated once per worker, and a hook it registered at its top level would
// belong to the first file that imported it only. A helper registers its
// cleanup here instead, once; `cleanup-hooks.ts`, a setup file vitest runs
// before every file, hooks the registered cleanups into that file.
//
// The cleanups run last registered first, as vitest runs hooks of one suite
// (`sequence.hooks: "stack"`): each runs after the test file's own hooks.

type Cleanup = () => Promise<void>;

const afterEachTest: Cleanup[] = [];
const afterEachFile: Cleanup[] = [];

/** Runs `cleanup` after every test of every file (from the registration on). */
export function cleanUpAfterEachTest(cleanup: Cleanup): void {
  afterEachTest.push(cleanup);
}

/** Runs `cleanup` after every file (from the registration on). */
export function cleanUpAfterEachFile(cleanup: Cleanup): void {
  afterEachFile.push(cleanup);
}

async function runAll(cleanups: readonly Cleanup[]): Promise<void> {
  for (const cleanup of [...cleanups].reverse()) await cleanup();
}

export const runTestCleanups = (): Promise<void> => runAll(afterEachTest);
export const runFileCleanups = (): Promise<void> => runAll(afterEachFile);
