// No module of ours takes part in an import circle, type-only imports
// included: a circle hides which module owns a concept, and the lint rule
// (import-x/no-cycle) skips `import type`. This walks every package's and
// app's src/ and follows each relative import.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry) && !/\.test(-d)?\.tsx?$/.test(entry) ? [path] : []
  })
}

const importPattern = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)'/g

/** The files each file imports, relative imports only (`./x.js` is `./x.ts` on disk). */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files)
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const targets: string[] = []
    for (const match of readFileSync(file, 'utf8').matchAll(importPattern)) {
      const specifier = match[1] as string
      const base = resolve(dirname(file), specifier)
      const candidates = [base.replace(/\.js$/, '.ts'), base.replace(/\.js$/, '.tsx'), `${base}.ts`, join(base, 'index.ts')]
      const target = candidates.find((candidate) => known.has(candidate))
      if (target !== undefined) targets.push(target)
    }
    graph.set(file, targets)
  }
  return graph
}

/** Every circle found by a depth-first walk, each as the files along it. */
export function findCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const circles: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (file: string): void => {
    state.set(file, 'open')
    stack.push(file)
    for (const next of graph.get(file) ?? []) {
      const seen = state.get(next)
      if (seen === 'open') circles.push([...stack.slice(stack.indexOf(next)), next])
      else if (seen === undefined) visit(next)
    }
    stack.pop()
    state.set(file, 'done')
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file)
  return circles
}

const packageDirs = ['packages', 'apps'].flatMap((group) =>
  readdirSync(join(root, group))
    .map((name) => join(root, group, name))
    .filter((dir) => existsSync(join(dir, 'package.json'))),
)

describe('import circles', () => {
  it('finds a circle through a type-only import (the check can fail)', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ])
    expect(findCircles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']])
    expect(findCircles(new Map([['a.ts', ['b.ts']], ['b.ts', []]]))).toEqual([])
  })

  it('reads type-only imports and re-exports as edges', () => {
    const graph = importGraph([join(root, 'apps', 'server', 'src', 'index.ts'), ...sourceFiles(join(root, 'apps', 'server', 'src'))])
    expect(graph.size).toBeGreaterThan(5)
    expect([...graph.values()].some((targets) => targets.length > 0)).toBe(true)
  })

  it.each(packageDirs.map((dir) => [relative(root, dir), dir] as const))('%s/src has no import circle', (_name, dir) => {
    const circles = findCircles(importGraph(sourceFiles(join(dir, 'src'))))
    expect(circles.map((circle) => circle.map((file) => relative(dir, file)).join(' -> '))).toEqual([])
  })
})
