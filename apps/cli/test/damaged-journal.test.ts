import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { examplesDir, jsonLines, runLocus, tempDir } from './helpers.js'

const fanOut = join(examplesDir, 'long-fan-out/long-fan-out.ts')

let runsDir: string
/** The complete journal of a finished long fan-out (12 agent calls), one entry a line, without newlines. */
let recorded: string[]

beforeAll(async () => {
  runsDir = join(await tempDir('locus-damaged-'), 'runs')
  const ran = await runLocus(['run', fanOut, '--host', 'scripted', '--runs-dir', runsDir, '--run-id', 'base-run', '--quiet'])
  expect(ran.code).toBe(0)
  recorded = readFileSync(join(runsDir, 'base-run', 'journal.jsonl'), 'utf8').split('\n').slice(0, -1)
})

/**
 * A copy of the recorded run under `runId` whose journal is `lines` (and
 * `tail` after the last newline): its call artifacts stay, its result.json
 * goes unless `finished`.
 */
function runWith(runId: string, lines: readonly string[], options: { tail?: string; finished?: boolean } = {}): void {
  const dir = join(runsDir, runId)
  cpSync(join(runsDir, 'base-run'), dir, { recursive: true })
  if (options.finished !== true) rmSync(join(dir, 'result.json'))
  const text = lines.map((line) => `${line.replaceAll('"base-run"', JSON.stringify(runId))}\n`).join('') + (options.tail ?? '')
  writeFileSync(join(dir, 'journal.jsonl'), text)
}

/** The recorded lines up to and including line `last` (1-based): a run killed there. */
const killedAfter = (last: number): string[] => recorded.slice(0, last)
/** `lines` with line `n` (1-based) replaced. */
const replaced = (lines: readonly string[], n: number, text: string): string[] => lines.map((line, index) => (index === n - 1 ? text : line))
/** `lines` without line `n` (1-based). */
const without = (lines: readonly string[], n: number): string[] => lines.filter((_, index) => index !== n - 1)

describe('a damaged journal stops replay, resume and journal, naming the line', () => {
  it('an unreadable middle line: each exits 2 naming line 14 and how to go on, and writes nothing', async () => {
    runWith('garbled', replaced(recorded, 14, '{"v":1,"seq":14,"ts":"2026-'), { finished: true })
    runWith('garbled-killed', replaced(killedAfter(20), 14, 'not json'))
    for (const [args, runId] of [
      [['replay'], 'garbled'],
      [['resume'], 'garbled-killed'],
      [['journal'], 'garbled'],
    ] as const) {
      const result = await runLocus([...args, runId, '--runs-dir', runsDir])
      expect({ args, code: result.code }).toEqual({ args, code: 2 })
      expect(result.stderr).toMatch(new RegExp(`Run ${runId}'s journal is damaged \\(1 place\\)`))
      expect(result.stderr).toMatch(/^ {4}line 14: line 14 is not JSON/m)
      expect(result.stderr).toContain(args[0] === 'journal' ? 'pass --accept-damage to print the readable lines' : `\`locus journal ${runId} --execution root --accept-damage\``)
      expect(result.stdout).toBe('')
    }
    // Nothing ran: no replay or resume execution was created, and the journals are as they were.
    expect((await runLocus(['show', 'garbled-killed', '--runs-dir', runsDir, '--json'])).stdout).not.toMatch(/resume-001/)
    expect(readFileSync(join(runsDir, 'garbled', 'journal.jsonl'), 'utf8')).toContain('{"v":1,"seq":14,"ts":"2026-\n')
  })

  it('a deleted middle line (a seq gap): each exits 2 naming the line and the seq it expected', async () => {
    runWith('gapped', without(recorded, 14), { finished: true })
    runWith('gapped-killed', without(killedAfter(20), 14))
    for (const [args, runId] of [
      [['replay'], 'gapped'],
      [['resume'], 'gapped-killed'],
      [['journal', '--json'], 'gapped'],
    ] as const) {
      const result = await runLocus([...args, runId, '--runs-dir', runsDir])
      expect({ args, code: result.code }).toEqual({ args, code: 2 })
      expect(result.stderr).toMatch(/line 14: seq gap, expected 14, found 15: the line before it is missing/)
      expect(result.stdout).toBe('')
    }
    // `show` lists it among the journal's problems.
    expect((await runLocus(['show', 'gapped', '--runs-dir', runsDir])).stdout).toMatch(/journal: +line 14: seq gap, expected 14, found 15/)
  })

  it('a line there twice is damage too', async () => {
    runWith('repeated', [...recorded.slice(0, 14), ...recorded.slice(13)], { finished: true })
    const result = await runLocus(['replay', 'repeated', '--runs-dir', runsDir])
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/line 15: seq 14 repeats the seq of the line before it \(expected 15\)/)
  })

  it('with --accept-damage they go on with the readable lines, and say so', async () => {
    // Line 14 is the agent_end of one call: its end is lost.
    expect(JSON.parse(recorded[13] as string)).toMatchObject({ type: 'agent_end' })
    runWith('accepted', without(recorded, 14), { finished: true })
    const replayed = await runLocus(['replay', 'accepted', '--runs-dir', runsDir, '--accept-damage'])
    expect(replayed.code).toBe(1)
    expect(replayed.stderr).toMatch(/journal is damaged \(1 place\); --accept-damage: replaying the readable lines only/)
    expect(replayed.stderr).toMatch(/line 14: seq gap/)
    expect(replayed.stdout).toMatch(/NOT identical/)

    const printed = await runLocus(['journal', 'accepted', '--runs-dir', runsDir, '--accept-damage', '--json'])
    expect(printed.code).toBe(0)
    expect(jsonLines(printed.stdout)).toHaveLength(recorded.length - 1)
    expect(printed.stderr).toMatch(/line 14: seq gap, expected 14, found 15/)

    runWith('accepted-killed', without(killedAfter(20), 14))
    const resumed = await runLocus(['resume', 'accepted-killed', '--runs-dir', runsDir, '--accept-damage'])
    expect(resumed.code).toBe(0)
    expect(resumed.stderr).toMatch(/--accept-damage: resuming from the readable lines only; a call with no readable end runs again live/)
    // 8 calls had ended by line 20; one of those ends was lost, so 7 replay and 5 run live (the lost one among them).
    expect(resumed.stdout).toMatch(/7 call\(s\) replayed from the recording, 5 ran live/)
  })

  it('a torn final line (a crash mid-write) is not damage: every command goes on without a word about it', async () => {
    runWith('torn', recorded, { finished: true, tail: '{"v":1,"seq":29,"ts":"2026-' })
    const replayed = await runLocus(['replay', 'torn', '--runs-dir', runsDir])
    expect(replayed.stderr).toBe('')
    expect(replayed.code).toBe(0)
    expect(replayed.stdout).toMatch(/identical/)
    const printed = await runLocus(['journal', 'torn', '--runs-dir', runsDir, '--json'])
    expect(printed.code).toBe(0)
    expect(jsonLines(printed.stdout)).toHaveLength(recorded.length)

    runWith('torn-killed', killedAfter(20), { tail: '{"v":1,"seq":21,"ts":"2026-12-05T08:07:35.833Z","type":"agent_st' })
    const resumed = await runLocus(['resume', 'torn-killed', '--runs-dir', runsDir])
    expect(resumed.stderr).not.toMatch(/damaged/)
    expect(resumed.code).toBe(0)
    expect(resumed.stdout).toMatch(/8 call\(s\) replayed from the recording, 4 ran live/)
  })
})
