/**
 * The repository's TypeScript sources as the TypeScript compiler's own parser
 * sees them (`ts.createSourceFile`, no type checking): the static imports
 * between files, where a symbol is defined, and how long each function is.
 * Used by the tests that keep the module map of docs/architecture.md and
 * the size limits true.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** The repository root, which every path below is relative to. */
export const ROOT = resolve(new URL('../..', import.meta.url).pathname);

const parsed = new Map<string, ts.SourceFile>();

/** The parsed file at `path` (relative to the root), cached for the run. */
export function sourceFile(path: string): ts.SourceFile {
  let file = parsed.get(path);
  if (!file) {
    file = ts.createSourceFile(path, readFileSync(join(ROOT, path), 'utf8'), ts.ScriptTarget.Latest, true);
    parsed.set(path, file);
  }
  return file;
}

/** Every file under `dir` (relative to the root) whose name ends with one of `extensions`, sorted. */
export function filesUnder(dir: string, extensions: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(join(ROOT, at), { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (extensions.some((e) => entry.name.endsWith(e))) found.push(path);
    }
  };
  walk(dir);
  return found.sort();
}

/** Whether an import or export declaration brings in types only (erased at run time). */
function typeOnly(clause: ts.ImportClause | ts.NamedExportBindings | undefined, declared: boolean): boolean {
  if (declared) return true;
  if (!clause) return false;
  if (ts.isImportClause(clause)) {
    if (clause.name) return false;
    const bindings = clause.namedBindings;
    if (!bindings || ts.isNamespaceImport(bindings)) return false;
    return bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
  }
  return (
    ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly)
  );
}

/**
 * The specifiers `path` imports for their values, as written and in source
 * order: `import ... from 'x'`, `import 'x'`, `export ... from 'x'`. Imports
 * of types only are left out (they run nothing, and esbuild drops them), and
 * so is dynamic `import()` (it runs nothing at import).
 */
function valueImportSpecifiers(path: string): string[] {
  const specifiers: string[] = [];
  for (const statement of sourceFile(path).statements) {
    let specifier: ts.Expression | undefined;
    if (ts.isImportDeclaration(statement)) {
      if (typeOnly(statement.importClause, statement.importClause?.isTypeOnly ?? false)) continue;
      specifier = statement.moduleSpecifier;
    } else if (ts.isExportDeclaration(statement)) {
      if (typeOnly(statement.exportClause, statement.isTypeOnly)) continue;
      specifier = statement.moduleSpecifier;
    }
    if (specifier && ts.isStringLiteral(specifier)) specifiers.push(specifier.text);
  }
  return specifiers;
}

/**
 * The files `path` imports statically from relative specifiers (`./x.ts`),
 * relative to the root, in source order: the steps on the way to code that
 * runs.
 */
export function staticImports(path: string): string[] {
  return valueImportSpecifiers(path)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(ROOT, resolve(ROOT, dirname(path), specifier)));
}

/**
 * The packages `path` imports statically for their values (bare specifiers
 * such as `@kubernetes/client-node` or `node:fs`, as written), in source
 * order.
 */
export function packageImports(path: string): string[] {
  return valueImportSpecifiers(path).filter((specifier) => !specifier.startsWith('.'));
}

/** Every file reachable from `from` in at most `hops` static imports, with one shortest path to it. */
export function reachableWithin(from: string, hops: number): Map<string, string[]> {
  const paths = new Map<string, string[]>([[from, [from]]]);
  let frontier = [from];
  for (let hop = 0; hop < hops; hop++) {
    const next: string[] = [];
    for (const file of frontier) {
      for (const imported of staticImports(file)) {
        if (paths.has(imported)) continue;
        paths.set(imported, [...(paths.get(file) ?? []), imported]);
        next.push(imported);
      }
    }
    frontier = next;
  }
  return paths;
}

/**
 * Whether `path` defines `symbol` at its top level: `name` (a function,
 * class, variable, interface or type) or `Class.member` (a method, accessor
 * or property of a class declared there).
 */
export function definesSymbol(path: string, symbol: string): boolean {
  const [name, member] = symbol.split('.');
  for (const statement of sourceFile(path).statements) {
    const names = ts.isVariableStatement(statement)
      ? statement.declarationList.declarations.map((d) => d.name.getText())
      : ts.isFunctionDeclaration(statement) ||
          ts.isClassDeclaration(statement) ||
          ts.isInterfaceDeclaration(statement) ||
          ts.isTypeAliasDeclaration(statement) ||
          ts.isEnumDeclaration(statement)
        ? [statement.name?.text ?? '']
        : [];
    if (!names.includes(name ?? '')) continue;
    if (member === undefined) return true;
    if (ts.isClassDeclaration(statement))
      return statement.members.some((m) => m.name !== undefined && m.name.getText() === member);
  }
  return false;
}

/** A function-like node with a body, measured in source lines. */
export interface FunctionSize {
  path: string;
  /** Where the function starts, 1-based. */
  line: number;
  /** `name`, `Class.method`, or `(anonymous)`. */
  name: string;
  /** Lines its body spans, first and last included. */
  lines: number;
}

function functionName(node: ts.FunctionLikeDeclaration): string {
  const own = node.name?.getText();
  const parent = node.parent;
  if (own && ts.isClassLike(parent)) return `${parent.name?.getText() ?? '(class)'}.${own}`;
  if (own) return own;
  if (ts.isConstructorDeclaration(node))
    return `${ts.isClassLike(parent) ? parent.name?.getText() : ''}.constructor`;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText();
  return '(anonymous)';
}

/** A function, method, constructor, accessor or arrow function that has a body. */
function isFunctionWithBody(node: ts.Node): node is ts.FunctionLikeDeclaration & { body: ts.Node } {
  return (
    (ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isArrowFunction(node)) &&
    node.body !== undefined
  );
}

/**
 * Every function, method, constructor, accessor and arrow function of
 * `path` with the number of lines its body spans (a nested function counts
 * within its parent too).
 */
export function functionSizes(path: string): FunctionSize[] {
  const file = sourceFile(path);
  const sizes: FunctionSize[] = [];
  const line = (pos: number) => file.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node: ts.Node) => {
    if (isFunctionWithBody(node)) {
      sizes.push({
        path,
        line: line(node.getStart()),
        name: functionName(node),
        lines: line(node.body.getEnd()) - line(node.body.getStart()) + 1,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return sizes;
}

/**
 * The text of every string, template and regular-expression literal of
 * `path`, in source order: what the code can send or match, without its
 * comments.
 */
export function literalTexts(path: string): string[] {
  const texts: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node) ||
      ts.isRegularExpressionLiteral(node)
    ) {
      texts.push(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile(path));
  return texts;
}
