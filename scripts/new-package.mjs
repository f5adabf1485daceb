#!/usr/bin/env node
// Scaffolds packages/<name> with the manifest, configs and gates every public
// package shares, so a new package starts consistent instead of copied by hand.
// Usage: node scripts/new-package.mjs <name> "<description>" [dep ...]
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const [name, description, ...dependencies] = process.argv.slice(2)
if (!name || !description || !/^[a-z][a-z0-9-]*$/.test(name)) {
  console.error('usage: node scripts/new-package.mjs <kebab-name> "<description>" [dependency ...]')
  process.exit(2)
}
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const directory = join(root, 'packages', name)
if (existsSync(directory)) {
  console.error(`packages/${name} exists already`)
  process.exit(2)
}
mkdirSync(join(directory, 'src'), { recursive: true })
mkdirSync(join(directory, 'bench'), { recursive: true })

const manifest = {
  name: `@locus/${name}`,
  version: '0.0.0',
  description,
  license: 'MIT',
  type: 'module',
  sideEffects: false,
  engines: { node: '>=20.19' },
  repository: { type: 'git', url: 'git+https://github.com/locus-dev/locus.git', directory: `packages/${name}` },
  exports: {
    '.': { '@locus/source': './src/index.ts', types: './dist/index.d.ts', default: './dist/index.js' },
    './package.json': './package.json',
    './internal/*': null,
  },
  main: './dist/index.js',
  types: './dist/index.d.ts',
  files: ['dist', 'src', '!src/**/*.test.ts', '!src/**/*.test-d.ts'],
  scripts: {
    build: 'tsup',
    typecheck: 'tsc --noEmit',
    bench: `node --conditions=@locus/source --import tsx bench/${name}.bench.ts`,
    gates: 'publint --strict && attw --pack . --profile esm-only',
  },
  dependencies: Object.fromEntries(dependencies.map((dependency) => [dependency, dependency.startsWith('@locus/') ? 'workspace:*' : 'latest'])),
  devDependencies: {
    '@locus/bench-kit': 'workspace:*',
    '@locus/tsconfig': 'workspace:*',
    '@locus/tsup-config': 'workspace:*',
    '@locus/vitest-config': 'workspace:*',
  },
  publishConfig: { access: 'public' },
}
const files = {
  'package.json': JSON.stringify(manifest, null, 2) + '\n',
  'tsconfig.json': JSON.stringify({ extends: '@locus/tsconfig/base.json', include: ['src', 'test', 'bench', '*.config.ts'] }, null, 2) + '\n',
  'tsconfig.build.json': JSON.stringify({ extends: '@locus/tsconfig/build.json', include: ['src'], exclude: ['src/**/*.test.ts', 'src/**/*.test-d.ts'] }, null, 2) + '\n',
  'tsup.config.ts': "import { locusPackage } from '@locus/tsup-config'\n\nexport default locusPackage()\n",
  'vitest.config.ts': `import { defineProject, mergeConfig } from 'vitest/config'\nimport { sharedConfig } from '@locus/vitest-config'\n\nexport default mergeConfig(sharedConfig, defineProject({ test: { name: '${name}' } }))\n`,
  'src/index.ts': '',
}
for (const [file, content] of Object.entries(files)) writeFileSync(join(directory, file), content)
console.log(`created packages/${name}; replace "latest" ranges with pinned ones, then pnpm install`)
