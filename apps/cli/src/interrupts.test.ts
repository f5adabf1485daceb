import { describe, expect, it } from 'vitest'
import type { CliIo } from './cli-io.js'
import { cancelOnInterrupt } from './interrupts.js'

function fakeIo(): { io: CliIo; interrupt: () => void; events: string[] } {
  const events: string[] = []
  let handler: (() => void) | undefined
  const sink = { write: (text: string) => { events.push(`stderr: ${text.trim().slice(0, 20)}`); return true } }
  const io = {
    stdout: sink,
    stderr: sink,
    onInterrupt: (next: () => void) => {
      handler = next
      return () => { handler = undefined }
    },
    exit: (code: number) => { events.push(`exit ${code}`) },
  } as unknown as CliIo
  return { io, interrupt: () => { handler?.() }, events }
}

describe('cancelOnInterrupt', () => {
  it('cancels on the first Ctrl-C, and flushes the journal before exiting 130 on the second', () => {
    const { io, interrupt, events } = fakeIo()
    cancelOnInterrupt(io, () => events.push('cancel'), () => events.push('flush'))
    interrupt()
    expect(events.filter((event) => !event.startsWith('stderr'))).toEqual(['cancel'])
    interrupt()
    expect(events.filter((event) => !event.startsWith('stderr'))).toEqual(['cancel', 'flush', 'exit 130'])
  })

  it('still exits when flushing fails', () => {
    const { io, interrupt, events } = fakeIo()
    cancelOnInterrupt(io, () => undefined, () => { throw new Error('disk full') })
    interrupt()
    interrupt()
    expect(events).toContain('exit 130')
  })
})
