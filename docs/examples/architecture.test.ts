// docs/architecture.md draws the dependency graph; this keeps it the same as
// the package manifests and the imports.
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))

interface Manifest {
  readonly name: string
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
}

function workspacePackages(): { dir: string; manifest: Manifest }[] {
  return ['packages', 'apps'].flatMap((group) =>
    readdirSync(join(root, group)).map((name) => {
      const dir = join(root, group, name)
      return { dir, manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest }
    }),
  )
}

function declaredLocusDeps(manifest: Manifest): string[] {
  return Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })
    .filter((name) => name.startsWith('@locus/'))
    .sort()
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry) && !/\.test(-d)?\.tsx?$/.test(entry) ? [path] : []
  })
}

function importedLocusPackages(dir: string, self: string): string[] {
  const found = new Set<string>()
  for (const file of sourceFiles(join(dir, 'src'))) {
    for (const match of readFileSync(file, 'utf8').matchAll(/from '(@locus\/[a-z-]+)/g)) {
      if (match[1] !== self) found.add(match[1] as string)
    }
  }
  return [...found].sort()
}

function drawnGraph(): Map<string, string[]> {
  const text = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8')
  const section = text.slice(text.indexOf('## Dependency graph'))
  const block = /```text\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  const graph = new Map<string, string[]>()
  for (const line of block.trim().split('\n')) {
    const [name, deps = ''] = line.split('->').map((part) => part.trim())
    graph.set(name as string, deps.length === 0 ? [] : deps.split(',').map((dep) => dep.trim()).sort())
  }
  return graph
}

describe('docs/architecture.md', () => {
  const packages = workspacePackages()
  const graph = drawnGraph()

  it('draws every workspace package and no other', () => {
    expect([...graph.keys()].sort()).toEqual(packages.map(({ manifest }) => manifest.name).sort())
  })

  it.each(packages.map(({ dir, manifest }) => [manifest.name, dir, manifest] as const))(
    '%s: the drawn edges are the manifest and cover every import',
    (name, dir, manifest) => {
      expect(graph.get(name)).toEqual(declaredLocusDeps(manifest))
      for (const imported of importedLocusPackages(dir, name)) expect(graph.get(name)).toContain(imported)
    },
  )

  it('lists each package after everything it depends on, so the graph has no cycle', () => {
    const order = [...graph.keys()]
    for (const [name, deps] of graph) {
      for (const dep of deps) expect(order.indexOf(dep), `${name} -> ${dep}`).toBeLessThan(order.indexOf(name))
    }
  })
})
