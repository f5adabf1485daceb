// The worker's local reckoning of its lease: a dispatch goes ahead only while the last heartbeat that
// got through was sent less than a lease ago, on an injected clock (no sleeps, no database).
import { LeaseLostError } from '@locus/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createLeaseGuard } from '../src/lease-guard.js'

const LEASE_MS = 2000

function guardAt(takenAt: number) {
  const clock = { now: takenAt }
  const guard = createLeaseGuard({ runId: 'run-1', epoch: 3, leaseMs: LEASE_MS, takenAt, now: () => clock.now })
  return { clock, guard }
}

describe('createLeaseGuard', () => {
  it('lets a dispatch through at once while the lease is fresh, and stops it the moment the last beat is a lease old', async () => {
    const { clock, guard } = guardAt(1000)
    expect(guard.whenLive()).toBeUndefined()
    clock.now = 1000 + LEASE_MS - 1
    expect(guard.whenLive()).toBeUndefined()
    // No heartbeat came (a SIGSTOP, a frozen VM, a lost database): no new call starts, without waiting for a beat.
    clock.now = 1000 + LEASE_MS
    const waiting = guard.whenLive()
    expect(waiting).toBeInstanceOf(Promise)
    let settled = false
    void waiting?.then(() => (settled = true))
    await Promise.resolve()
    expect(settled).toBe(false)
    // A beat sent now gets through: the waiting dispatch goes ahead.
    guard.renewed(clock.now)
    await waiting
    expect(guard.whenLive()).toBeUndefined()
  })

  it('a beat that was sent before the pause does not revive the lease when it lands after it', async () => {
    const { clock, guard } = guardAt(0)
    clock.now = LEASE_MS + 500
    const waiting = guard.whenLive()
    // Its answer arrives late, but it was sent at 100 ms: the lease it set ran out at 2,100 ms.
    guard.renewed(100)
    expect(guard.whenLive()).toBeInstanceOf(Promise)
    guard.renewed(clock.now)
    await waiting
  })

  it('rejects every waiting and later dispatch once the lease is lost', async () => {
    const { clock, guard } = guardAt(0)
    clock.now = LEASE_MS * 2
    const waiting = guard.whenLive()
    const lost = new LeaseLostError('run-1', 3, 4)
    guard.lost(lost)
    await expect(waiting).rejects.toBe(lost)
    await expect(guard.whenLive()).rejects.toBe(lost)
    // A beat after the loss changes nothing.
    guard.renewed(clock.now)
    await expect(guard.whenLive()).rejects.toBe(lost)
    expect(guard.isLost).toBe(true)
  })

  it('property: a dispatch goes ahead at once exactly when the newest successful beat was sent less than a lease ago', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20_000 }), { maxLength: 12 }), fc.integer({ min: 0, max: 25_000 }), (beats, now) => {
        const { clock, guard } = guardAt(0)
        for (const sentAt of beats) guard.renewed(sentAt)
        clock.now = Math.max(now, ...beats)
        const newest = Math.max(0, ...beats)
        const pending = guard.whenLive()
        pending?.catch(() => undefined)
        expect(pending === undefined).toBe(clock.now - newest < LEASE_MS)
      }),
    )
  })
})
