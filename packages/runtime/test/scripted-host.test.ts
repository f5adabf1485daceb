import { createManualClock } from '@locus/retry'
import { RuntimeInputError, createScriptedHost, parseScriptedFixtures, runWorkflowScript, startWorkflowRun } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { linesOfType, readRun, settle, tempRunsDir } from './helpers.js'

describe('createScriptedHost', () => {
  it('matches rules by agent, label and prompt, in order, and counts what it was asked', async () => {
    const host = createScriptedHost({
      rules: [
        { match: { agent: 'critic' }, steps: [{ text: 'critic says no' }] },
        { match: { label: 'summary' }, steps: [{ text: 'a summary' }] },
        { match: { prompt: /ticket T-\d+/ }, steps: [{ text: 'ticket answer' }] },
        { steps: [{ text: 'default' }] },
      ],
    })
    const run = await runWorkflowScript(
      async ({ agent }) => ({
        ok: true,
        answers: [
          (await agent('anything', { agent: 'critic' })).answer,
          (await agent('anything', { label: 'summary' })).answer,
          (await agent('look at ticket T-42')).answer,
          (await agent('something else')).answer,
        ],
      }),
      { host, runsDir: tempRunsDir() },
    )
    expect(run.result).toEqual({ ok: true, answers: ['critic says no', 'a summary', 'ticket answer', 'default'] })
    expect(host.calls).toHaveLength(4)
    expect(host.sessionCount).toBe(4)
  })

  it('plays steps in order and repeats the last one', async () => {
    const host = createScriptedHost({ rules: [{ steps: [{ text: 'one' }, { text: 'two' }] }] })
    const run = await runWorkflowScript(
      async ({ agent }) => ({ ok: true, answers: [(await agent('a')).answer, (await agent('b')).answer, (await agent('c')).answer] }),
      { host, runsDir: tempRunsDir() },
    )
    expect(run.result).toEqual({ ok: true, answers: ['one', 'two', 'two'] })
  })

  it('delays on the injected clock', async () => {
    const clock = createManualClock()
    const host = createScriptedHost({ clock, rules: [{ steps: [{ text: 'late', delayMs: 500 }] }] })
    const handle = await startWorkflowRun(async ({ agent }) => ({ ok: true, a: (await agent('x')).answer }), { host, clock, runsDir: tempRunsDir() })
    await settle()
    expect(clock.pendingSleeps().map((sleep) => sleep.ms)).toContain(500)
    await clock.advance(500)
    expect((await handle.done).ok).toBe(true)
  })

  it('fails a prompt no rule matches with a message that says how to fix the fixtures', async () => {
    const host = createScriptedHost({ rules: [{ match: { agent: 'other' }, steps: [{ text: 'x' }] }] })
    const run = await runWorkflowScript(async ({ agent }) => agent('unmatched prompt'), { host, runsDir: tempRunsDir() })
    expect(linesOfType(readRun(run).lines, 'error')[0]?.message).toMatch(/no rule for agent "default"/)
  })
})

describe('parseScriptedFixtures', () => {
  it('reads the JSON form, turning promptPattern into a regular expression', () => {
    const options = parseScriptedFixtures({ rules: [{ match: { promptPattern: '^item \\d+$' }, steps: [{ text: 'ok' }, { hang: true }] }] })
    const match = options.rules[0]!.match!
    expect(match.prompt).toBeInstanceOf(RegExp)
    expect((match.prompt as RegExp).test('item 7')).toBe(true)
  })

  it('refuses bad fixtures naming the field', () => {
    expect(() => parseScriptedFixtures({ rules: [{ steps: [{ txt: 'typo' }] }] }, 'fixtures.json')).toThrow(/fixtures\.json\.rules\.0\.steps\.0/)
    expect(() => parseScriptedFixtures({ rules: [{ steps: [{ throw: 'not-a-cause' }] }] })).toThrow(RuntimeInputError)
    expect(() => parseScriptedFixtures({ rules: [{ steps: [] }] })).toThrow(/steps/)
  })
})

describe('log()', () => {
  it('writes the script log to the journal', async () => {
    const run = await runWorkflowScript(async ({ log }) => {
      log('checked the ledger', { rows: 3 })
      return { ok: true }
    }, { runsDir: tempRunsDir() })
    expect(linesOfType(readRun(run).lines, 'log')[0]).toMatchObject({ message: 'checked the ledger', data: { rows: 3 } })
  })
})
