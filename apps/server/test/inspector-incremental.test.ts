import { createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { type RunStore, createFileRunStore } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createServer } from '../src/index.js'
import { tempRunsDir } from './helpers.js'

/** Opens when the test says so, as many times as it is opened. */
function steps() {
  let open: () => void = () => undefined
  let next = new Promise<void>((resolve) => {
    open = resolve
  })
  return {
    wait: () => next,
    step() {
      const release = open
      next = new Promise<void>((resolve) => {
        open = resolve
      })
      release()
    },
  }
}

describe('the inspector keeps a live execution folded', () => {
  it('a live run page read again reads only the journal lines written since, and shows them', async () => {
    const gate = steps()
    const stepwise = defineWorkflow({
      name: 'stepwise',
      input: z.object({ rounds: z.number().int() }),
      run: async ({ input, log }) => {
        for (let round = 0; round < input.rounds; round += 1) {
          await gate.wait()
          for (let line = 0; line < 10; line += 1) log(`round ${String(round)} line ${String(line)}`)
        }
        return { ok: true }
      },
    })
    const base = createFileRunStore(tempRunsDir())
    let linesRead = 0
    const store: RunStore = {
      ...base,
      readLines: (ref, options) => {
        const lines = base.readLines(ref, options)
        return {
          async *[Symbol.asyncIterator]() {
            for await (const line of lines) {
              linesRead += 1
              yield line
            }
          },
        }
      },
    }
    const runtime = createRuntime({ workflows: [stepwise], store, host: createScriptedHost({ rules: [{ steps: [{ text: 'ok' }] }] }) })
    const app = createServer({ runtime })
    const handle = await runtime.start('stepwise', { input: { rounds: 3 } })
    const stepped = async (): Promise<void> => {
      const before = handle.view()?.lastSeq ?? -1
      gate.step()
      await expect.poll(() => handle.view()?.lastSeq ?? -1).toBeGreaterThanOrEqual(before + 10)
    }
    await stepped()
    const first = await app.request(`/runs/${handle.runId}`)
    expect(first.status).toBe(200)
    expect(await first.text()).toContain('round 0 line 9')
    const afterFirst = linesRead
    expect(afterFirst).toBeGreaterThanOrEqual(11)

    await stepped()
    const second = await (await app.request(`/runs/${handle.runId}`)).text()
    expect(second).toContain('round 1 line 9')
    // Only the ten new lines (and nothing twice): not the whole journal again.
    expect(linesRead - afterFirst).toBe(10)

    const again = await (await app.request(`/runs/${handle.runId}`)).text()
    expect(again).toContain('round 1 line 9')
    expect(linesRead - afterFirst).toBe(10)

    gate.step()
    await handle.done
    const ended = await (await app.request(`/runs/${handle.runId}`)).text()
    expect(ended).toContain('round 2 line 9')
    expect(ended).toContain('completed')

    // A fresh server's first page of the ended run reads its journal once: the status and figures come from the run's
    // description built on that one fold and the summary row, not from a second read.
    let journalLength = 0
    for await (const line of base.readLines({ runId: handle.runId, executionId: handle.runId })) journalLength += line.seq >= 0 ? 1 : 0
    const before = linesRead
    const fresh = await (await createServer({ runtime }).request(`/runs/${handle.runId}`)).text()
    expect(fresh).toContain('round 2 line 9')
    expect(linesRead - before).toBe(journalLength)
  })
})
