// Where a run's files live on disk is the file store's business alone: its
// layout (RUN_LAYOUT, runPaths) is private to packages/store/src/file-*.ts.
// Everything else names an artifact by key (ARTIFACT_KEYS), an execution by
// ref, and shows a person the locations its store reports. This scans every
// package's and app's source, benches included, so a second copy of the
// layout cannot come back unnoticed.
import { readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { projectSourceFiles, repoRoot } from './source-tree.js'

const root = repoRoot
const files = projectSourceFiles()
// The artifact keys are the store's too: the one place a call's keys are spelled.
const owner = /^packages\/store\/src\/(?:file-[a-z-]+|artifact-keys)\.ts$/

/** Names that spell the on-disk layout: the layout's own exports, and paths built from its directory names. */
const layoutPatterns: readonly RegExp[] = [/\bRUN_LAYOUT\b/, /\brunPaths\b/, /\bRunPaths\b/, /\bCallPaths\b/, /join\([^)]*(?:[Rr]un|[Ee]xecution|location)[^)]*'(?:journal\.jsonl|executions|calls|outputs)'/, /`calls\/\$\{/]

function layoutUses(text: string): string[] {
  return layoutPatterns.filter((pattern) => pattern.test(text)).map(String)
}

describe('the file layout belongs to the file store', () => {
  it('scans a real tree (the owner itself spells the layout)', () => {
    expect(files.length).toBeGreaterThan(100)
    const owners = files.filter((file) => owner.test(relative(root, file)))
    expect(owners.some((file) => layoutUses(readFileSync(file, 'utf8')).length > 0)).toBe(true)
  })

  it('no source outside packages/store/src/file-*.ts knows it', () => {
    const offenders = files
      .filter((file) => !owner.test(relative(root, file)))
      .flatMap((file) => layoutUses(readFileSync(file, 'utf8')).map((use) => `${relative(root, file)}: ${use}`))
    expect(offenders).toEqual([])
  })

  it('the store does not export it', () => {
    const index = readFileSync(join(root, 'packages/store/src/index.ts'), 'utf8')
    expect(index).not.toMatch(/file-layout/)
    const journalIndex = readFileSync(join(root, 'packages/journal/src/index.ts'), 'utf8')
    expect(layoutUses(journalIndex)).toEqual([])
  })
})
