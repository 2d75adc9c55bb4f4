// The import graph of host/: every .ts file, and every relative module it
// names (static imports, `import type`, `export ... from`, `import("./x")`
// and `typeof import("./x")`). A type-only import couples two files as much
// as a value import does: the reader of the lower file must know the upper
// one. Modules outside host/ (packages, assembly/abi.ts) are not nodes:
// they cannot close a circle through host/.

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

/** Files by their path relative to the repository root, each with the host files it imports. */
export type ImportGraph = Map<string, string[]>;

export const readImportGraph = (root: string, folder: string): ImportGraph => {
  const graph: ImportGraph = new Map();
  for (const file of typeScriptFilesUnder(join(root, folder))) {
    const name = relative(root, file);
    const imported = moduleSpecifiersOf(file)
      .filter((specifier) => specifier.startsWith("."))
      .map((specifier) => relative(root, resolve(dirname(file), sourcePathOf(specifier))))
      .filter((target) => target.startsWith(`${folder}/`));
    graph.set(name, [...new Set(imported)].sort());
  }
  return graph;
};

const typeScriptFilesUnder = (folder: string): string[] =>
  readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();

// NodeNext resolution: a relative import names the emitted `.js` file.
const sourcePathOf = (specifier: string): string => specifier.replace(/\.js$/, ".ts");

const moduleSpecifiersOf = (file: string): string[] => {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const specifiers: string[] = [];
  const visit = (node: ts.Node): void => {
    const specifier = moduleSpecifierOf(node);
    if (specifier !== undefined) specifiers.push(specifier);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers;
};

const moduleSpecifierOf = (node: ts.Node): string | undefined => {
  if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined) {
    return literalText(node.moduleSpecifier);
  }
  if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) return literalText(node.arguments[0]);
  if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) return literalText(node.argument.literal);
  if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
    return literalText(node.moduleReference.expression);
  }
  return undefined;
};

const literalText = (node: ts.Node | undefined): string | undefined => (node !== undefined && ts.isStringLiteralLike(node) ? node.text : undefined);

/**
 * The strongly connected components with more than one file, or a file that
 * imports itself (Tarjan's algorithm), each in a stable order.
 */
export const circlesOf = (graph: ImportGraph): string[][] => {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (file: string): void => {
    index.set(file, index.size);
    lowLink.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        connect(target);
        lowLink.set(file, Math.min(lowLink.get(file)!, lowLink.get(target)!));
      } else if (onStack.has(target)) {
        lowLink.set(file, Math.min(lowLink.get(file)!, index.get(target)!));
      }
    }
    if (lowLink.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) components.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) connect(file);
  return components;
};

/** One circle through the component's first file, as `a → b → a`: the path a reader follows to see it. */
export const circlePath = (graph: ImportGraph, component: string[]): string[] => {
  const members = new Set(component);
  const start = component[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const target of graph.get(next) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) return [...pathBack(previous, next, start), start];
      if (previous.has(target)) continue;
      previous.set(target, next);
      queue.push(target);
    }
  }
  throw new Error(`no circle through ${start} in its own component`);
};

const pathBack = (previous: Map<string, string>, end: string, start: string): string[] => {
  const path = [end];
  while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
  return path;
};
