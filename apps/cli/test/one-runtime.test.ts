import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const source = join(dirname(fileURLToPath(import.meta.url)), '..', 'src')

/** Every source file of the CLI, tests beside the code left out. */
function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

/** The runtime's launchers that go around `createRuntime`: a command that used one would be a second road to a run. */
const AROUND_THE_RUNTIME = ['startWorkflowRun', 'runWorkflowScript', 'startResume', 'resumeRun', 'startReplay', 'replayRun', 'launchRun']

describe('the CLI starts, resumes and replays runs only through createRuntime', () => {
  const files = sourceFiles(source)

  it('finds the commands it scans', () => {
    const names = files.map((file) => relative(source, file))
    expect(names).toEqual(expect.arrayContaining([join('commands', 'run-command.ts'), join('commands', 'resume-command.ts'), join('commands', 'replay-command.ts')]))
  })

  it('no source file names a launcher that goes around the runtime', () => {
    const offenders = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8')
      return AROUND_THE_RUNTIME.filter((name) => new RegExp(`\\b${name}\\b`).test(text)).map((name) => `${relative(source, file)}: ${name}`)
    })
    expect(offenders).toEqual([])
  })

  it('run, resume and replay each call the runtime', () => {
    const calls = { 'run-command.ts': /runtime\.start\(/, 'resume-command.ts': /runtime\.resume\(/, 'replay-command.ts': /\)\.replay\(/ }
    for (const [file, call] of Object.entries(calls)) expect(readFileSync(join(source, 'commands', file), 'utf8')).toMatch(call)
  })
})
