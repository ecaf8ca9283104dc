import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/**
 * The repository's import graph, read with the TypeScript parser (already a devDependency):
 * every `import … from`, `export … from`, `import('…')` and `import('…')` type, so a
 * dynamic import cannot hide an edge, and each edge says whether it is type-only (erased
 * at run time). Only relative imports are edges; packages are what the loaded-modules
 * check of the installed tarball looks at.
 *
 * (madge and dependency-cruiser would do the same with some fifty more packages to install;
 * this is ~100 ms and sees exactly the TypeScript the repo is written in.)
 */
export interface ImportEdge {
  /** Repo-relative, `/`-separated paths of the importing and the imported file. */
  readonly from: string;
  readonly to: string;
  readonly specifier: string;
  readonly typeOnly: boolean;
  readonly dynamic: boolean;
  /** Whether `to` exists (a `.js` specifier names its `.ts` source). */
  readonly resolved: boolean;
}

/** Every .ts file (not .d.ts) under `folders`, repo-relative. */
export function sourceFiles(root: string, folders: readonly string[]): string[] {
  const walk = (dir: string): string[] =>
    existsSync(dir)
      ? readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
          const path = join(dir, entry.name);
          if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : walk(path);
          return /\.[mc]?ts$/.test(entry.name) && !/\.d\.[mc]?ts$/.test(entry.name) ? [path] : [];
        })
      : [];
  return folders.flatMap((folder) => walk(join(root, folder))).map((f) => toRepoPath(root, f));
}

/** The relative-import edges out of `files` (repo-relative paths). */
export function importEdges(root: string, files: readonly string[]): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const absolute = join(root, file);
    const source = ts.createSourceFile(
      absolute,
      readFileSync(absolute, 'utf8'),
      ts.ScriptTarget.Latest,
      true,
    );
    const add = (specifier: string, typeOnly: boolean, dynamic: boolean) => {
      if (!specifier.startsWith('.')) return;
      const target = resolve(dirname(absolute), specifier);
      const candidates = [
        target.replace(/\.([mc]?)js$/, '.$1ts'),
        target,
        join(target, 'index.ts'),
      ];
      const found = candidates.find((c) => existsSync(c) && !c.endsWith(sep));
      edges.push({
        from: file,
        to: toRepoPath(root, found ?? candidates[0]),
        specifier,
        typeOnly,
        dynamic,
        resolved: found !== undefined,
      });
    };
    const visit = (node: ts.Node) => {
      if (
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
        node.moduleSpecifier &&
        ts.isStringLiteral(node.moduleSpecifier)
      ) {
        add(node.moduleSpecifier.text, isTypeOnly(node), false);
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] &&
        ts.isStringLiteralLike(node.arguments[0])
      ) {
        add(node.arguments[0].text, false, true);
      } else if (
        ts.isImportTypeNode(node) &&
        ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal)
      ) {
        add(node.argument.literal.text, true, false);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return edges;
}

/**
 * `import type …`, `export type … from`. (Under verbatimModuleSyntax an import whose every
 * specifier is `type` still loads the module, so it counts as a value import.)
 */
function isTypeOnly(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(node)) return node.isTypeOnly;
  return node.importClause?.isTypeOnly ?? false;
}

/** Every cycle (strongly connected component of more than one file, or a self-import). */
export function cycles(edges: readonly ImportEdge[]): string[][] {
  const out = new Map<string, string[]>();
  for (const e of edges) out.set(e.from, [...(out.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const connect = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of out.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (out.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of out.keys()) if (!index.has(v)) connect(v);
  return found;
}

function toRepoPath(root: string, path: string): string {
  return relative(root, path).split(sep).join('/');
}
