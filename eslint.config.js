// ESLint (flat config): the recommended rules of ESLint and
// typescript-eslint, plus two type-aware rules on promises, for host/,
// test/, bench/, scripts/ and examples/. The formatter is Biome
// (biome.json); nothing here is about layout.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      "dist/",
      "build/",
      "coverage/",
      ".scratch/",
      "docs/",
      "native/",
      // assembly/ is AssemblyScript: its decorators on functions (`@inline`)
      // do not parse as TypeScript, and its types (i32, usize) and builtins
      // (load, store, changetype) are not TypeScript's, so neither the
      // type-aware rules nor the parser apply. abi.ts, the one file host/
      // imports, is plain TypeScript and is linted.
      "assembly/*",
      "!assembly/abi.ts",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A promise nobody awaits or handles is a failure nobody sees: handle
      // it (`.catch` that reports) or await it; `void` only where it cannot
      // reject, with a comment saying why.
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
    },
  },
  {
    rules: {
      // The codebase's way of saying "unused on purpose": a leading
      // underscore (an argument a signature requires, a field destructured
      // away to leave the rest).
      "@typescript-eslint/no-unused-vars": [
        "error",
        {
          argsIgnorePattern: "^_",
          varsIgnorePattern: "^_",
          caughtErrorsIgnorePattern: "^_",
          destructuredArrayIgnorePattern: "^_",
          ignoreRestSiblings: true,
        },
      ],
      // A `let` assigned once, but read (by a closure) before that
      // assignment, cannot be a `const`: core-exports.ts's `memory`, set
      // once the instance exists, read by the core's `abort`.
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // The documentation samples (README, decision 0046) show values and
    // the arguments a callback receives: `run.outcome; // "completed"`
    // is a sentence of the docs, not a forgotten statement.
    files: ["examples/**"],
    rules: {
      "@typescript-eslint/no-unused-expressions": "off",
      "@typescript-eslint/no-unused-vars": ["error", { args: "none" }],
    },
  },
  {
    // Node scripts in JavaScript (the CLI's launcher, build and bench
    // scripts, the package smoke test): Node's globals.
    files: ["**/*.js", "**/*.mjs"],
    languageOptions: { globals: globals.node },
  },
);
