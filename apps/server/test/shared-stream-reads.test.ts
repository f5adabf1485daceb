import type { RunRow, StreamRead } from '@locus/store'
import { describe, expect, it } from 'vitest'
import { sharedStreamReads } from '../src/token-stream.js'

/** A store whose reads, waits and row reads answer when the test says, counted. */
function heldStore() {
  const calls = { read: 0, wait: 0, row: 0 }
  const answers: (() => void)[] = []
  const later = <T>(value: T): Promise<T> =>
    new Promise<T>((resolve) => {
      answers.push(() => {
        resolve(value)
      })
    })
  const read: StreamRead = { records: [], firstKept: 0, next: 0, endedAt: undefined }
  return {
    calls,
    answerAll: () => {
      for (const answer of answers.splice(0)) answer()
    },
    streams: {
      read: () => {
        calls.read += 1
        return later(read)
      },
      wait: () => {
        calls.wait += 1
        return later(true)
      },
    },
    row: () => {
      calls.row += 1
      return later(undefined as RunRow | undefined)
    },
  }
}

describe('sharedStreamReads', () => {
  it('answers a hundred connections that ask the same thing at once with one store read, one wait and one row read', async () => {
    const store = heldStore()
    const shared = sharedStreamReads(store.streams, store.row)
    const connections = Array.from({ length: 100 }, () => shared.forConnection())
    const rows = connections.map((connection) => connection.row('r'))
    const reads = connections.map((connection) => connection.streams.read('r', { after: 5, limit: 10 }))
    const waits = connections.map((connection) => connection.streams.wait('r', 5, { timeoutMs: 500 }))
    expect(store.calls).toEqual({ read: 1, wait: 1, row: 1 })
    store.answerAll()
    await Promise.all([...rows, ...reads, ...waits])
    // Answered: the next question goes to the store again.
    const again = connections[0]?.streams.read('r', { after: 5, limit: 10 })
    expect(store.calls.read).toBe(2)
    store.answerAll()
    await again
  })

  it('never gives a connection a record read that began before its own row read', async () => {
    const store = heldStore()
    const shared = sharedStreamReads(store.streams, store.row)
    const early = shared.forConnection()
    const late = shared.forConnection()
    const earlyRead = early.streams.read('r', { after: 1, limit: 10 })
    expect(store.calls.read).toBe(1)
    // The late connection reads the row after that read began: its own read must begin after, so it is asked anew.
    const lateRow = late.row('r')
    const lateRead = late.streams.read('r', { after: 1, limit: 10 })
    expect(store.calls.read).toBe(2)
    // A third connection whose row read is the late one's may join the late read.
    const third = shared.forConnection()
    const thirdRow = third.row('r')
    const thirdRead = third.streams.read('r', { after: 1, limit: 10 })
    expect(store.calls).toMatchObject({ read: 2, row: 1 })
    store.answerAll()
    await Promise.all([earlyRead, lateRow, lateRead, thirdRow, thirdRead])
  })

  it('a shared wait stops for the connection whose signal aborts, and goes on for the others', async () => {
    const store = heldStore()
    const shared = sharedStreamReads(store.streams, store.row)
    const leaving = new AbortController()
    const left = shared.forConnection().streams.wait('r', 3, { signal: leaving.signal, timeoutMs: 500 })
    const staying = shared.forConnection().streams.wait('r', 3, { signal: new AbortController().signal, timeoutMs: 500 })
    expect(store.calls.wait).toBe(1)
    leaving.abort()
    expect(await left).toBe(false)
    store.answerAll()
    expect(await staying).toBe(true)
  })
})
