import fc from 'fast-check'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { describe, expect, it } from 'vitest'
import { RunIdError, validateRunId } from '@locus/journal'
import { runPaths } from '../src/file-layout.js'

const runsDir = resolve('/work/project/.locus-pi/runs')

describe('runPaths', () => {
  it('puts root outputs directly under .locus-pi/runs/<storageRootRunId>/', () => {
    const paths = runPaths(runsDir, 'run-1')
    const root = join(runsDir, 'run-1')
    expect(paths).toMatchObject({
      runsDir,
      storageRootRunId: 'run-1',
      executionId: 'run-1',
      rootDir: root,
      executionDir: root,
      journalPath: join(root, 'journal.jsonl'),
      resultPath: join(root, 'result.json'),
      outputsDir: join(root, 'outputs'),
      outputsReadmePath: join(root, 'outputs', 'README.md'),
    })
    expect(paths.callDir('call-7')).toEqual({
      dir: join(root, 'calls', 'call-7'),
      transcriptDir: join(root, 'calls', 'call-7', 'transcript'),
      resultDir: join(root, 'calls', 'call-7', 'result'),
    })
  })

  it('treats executionId equal to the root id as the root execution', () => {
    expect(runPaths(runsDir, 'run-1', 'run-1').executionDir).toBe(join(runsDir, 'run-1'))
  })

  it('puts resume attempts and children in fixed nested execution directories', () => {
    const paths = runPaths(runsDir, 'run-1', 'resume-2')
    const execution = join(runsDir, 'run-1', 'executions', 'resume-2')
    expect(paths.rootDir).toBe(join(runsDir, 'run-1'))
    expect(paths.executionDir).toBe(execution)
    expect(paths.journalPath).toBe(join(execution, 'journal.jsonl'))
    expect(paths.outputsReadmePath).toBe(join(execution, 'outputs', 'README.md'))
    expect(paths.callDir('c1').transcriptDir).toBe(join(execution, 'calls', 'c1', 'transcript'))
  })

  it('resolves a relative runs directory to an absolute one', () => {
    expect(isAbsolute(runPaths('.locus-pi/runs', 'run-1').journalPath)).toBe(true)
  })

  it.each(['..', '.', '../escape', 'a/b', 'a\\b', '/etc', 'C:\\x', '', 'run 1', 'run\u00001', '.hidden', '-flag', 'x'.repeat(129)])(
    'refuses the path-escaping or unusable id %j',
    (id) => {
      expect(() => runPaths(runsDir, id)).toThrow(RunIdError)
      expect(() => runPaths(runsDir, 'run-1', id)).toThrow(RunIdError)
      expect(() => runPaths(runsDir, 'run-1').callDir(id)).toThrow(RunIdError)
    },
  )

  it('names the id and the rule in the error', () => {
    expect(() => validateRunId('../x')).toThrow(/Invalid run id "..\/x": .*letters, digits/)
    expect(() => runPaths(runsDir, 'run-1', '../x')).toThrow(/Invalid executionId/)
    try {
      validateRunId('a/b')
    } catch (error) {
      expect(RunIdError.isInstance(error)).toBe(true)
      expect(error).toMatchObject({ code: 'RUN_ID_INVALID', id: 'a/b' })
    }
  })

  it('no accepted id of any kind escapes the runs directory', () => {
    const anyId = fc.oneof(fc.string(), fc.stringMatching(/^[./\\a-z0-9-]{0,12}$/))
    fc.assert(
      fc.property(anyId, anyId, anyId, (root, execution, call) => {
        let dirs: string[]
        try {
          const paths = runPaths(runsDir, root, execution)
          dirs = [paths.rootDir, paths.executionDir, paths.callDir(call).dir]
        } catch (error) {
          expect(RunIdError.isInstance(error)).toBe(true)
          return
        }
        for (const dir of dirs) {
          const fromRuns = relative(runsDir, dir)
          expect(fromRuns === '' || fromRuns.startsWith('..') || isAbsolute(fromRuns)).toBe(false)
          expect(fromRuns.split(sep)).not.toContain('..')
        }
      }),
      { numRuns: 1000 },
    )
  })

  it('accepts the ids a runtime generates', () => {
    for (const id of ['run-2026-09-22T16-21-00Z-a1b2', 'resume-1', 'child.g1_2', 'R1']) expect(validateRunId(id)).toBe(id)
  })
})
