import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { JOURNAL_LINE_TYPES } from '@locus/journal'
import { describe, expect, it } from 'vitest'
import type { CliIo } from '../src/cli-io.js'
import { createProgram } from '../src/program.js'
import { repoRoot } from './helpers.js'

const cliDoc = readFileSync(join(repoRoot, 'docs', 'cli.md'), 'utf8')
const io: CliIo = { stdout: { write: () => true }, stderr: { write: () => true }, env: {}, cwd: repoRoot, onInterrupt: () => () => undefined, exit: () => undefined }

describe('docs/cli.md lists what the CLI has', () => {
  it('the command list names every command of the program', () => {
    const glance = cliDoc.slice(cliDoc.indexOf('## Commands at a glance'), cliDoc.indexOf('## Exit codes'))
    const commands = createProgram(io, () => undefined).commands.map((command) => command.name())
    expect(commands).toEqual(expect.arrayContaining(['worker', 'db']))
    for (const command of commands) expect({ command, listed: glance.includes(`| \`locus ${command}`) }).toEqual({ command, listed: true })
  })

  it('the journal --type row lists every line type of the journal schema', () => {
    const row = cliDoc.split('\n').find((line) => line.startsWith('| `journal` | `--type <types>`')) ?? ''
    const listed = [...row.matchAll(/`([a-z_]+)`/g)].map((match) => match[1]).filter((name) => name !== 'journal')
    expect(listed.sort()).toEqual([...JOURNAL_LINE_TYPES].sort())
  })
})
