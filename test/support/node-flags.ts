// The Node flags every child process a test spawns runs with. An unhandled
// rejection ends the child with an error (as it ends vitest's own workers,
// vitest.config.ts `execArgv`), so no flow of the runtime, the store or the
// CLI can leave one unnoticed (issue 11).

export const childNodeFlags: readonly string[] = ["--unhandled-rejections=strict"];
