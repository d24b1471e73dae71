import fs from 'node:fs';
import path from 'node:path';

/**
 * The project's own import graph, read from the source: each TypeScript file and the project files it imports by a
 * relative path, type-only imports included. For the checks ESLint's rules cannot make (import-x/no-cycle skips
 * type-only imports).
 */
export const root = path.join(__dirname, '..', '..', '..');
const IMPORT = /(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']*|\.)'/g;
const SKIP = new Set(['node_modules', 'dist', '.git', '.data', '.tools', 'test-output']);

export function tsFiles(dir: string = root): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (SKIP.has(e.name)) return [];
    const full = path.join(dir, e.name);
    return e.isDirectory() ? tsFiles(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The project files `file` imports (absolute paths). */
export function importsOf(file: string): string[] {
  return [...fs.readFileSync(file, 'utf8').matchAll(IMPORT)].flatMap((m) => {
    const base = path.resolve(path.dirname(file), m[1] ?? '');
    const found = [base, `${base}.ts`, path.join(base, 'index.ts')].find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
    return found ? [found] : [];
  });
}

/** The shortest chain of imports from `file` to a file `target` accepts, or undefined. */
export function chainTo(file: string, target: (f: string) => boolean): string[] | undefined {
  const seen = new Set<string>([file]);
  const queue: string[][] = [[file]];
  for (let chain = queue.shift(); chain; chain = queue.shift()) {
    const current = chain[chain.length - 1] ?? file;
    if (target(current)) return chain;
    for (const next of importsOf(current)) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push([...chain, next]);
      }
    }
  }
  return undefined;
}

/** Every circle of imports among `files` (strongly connected components of more than one file, or a self-import). */
export function importCycles(files: string[]): string[][] {
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = stack.pop()) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
  };
  for (const f of graph.keys()) if (!index.has(f)) visit(f);
  return cycles;
}
