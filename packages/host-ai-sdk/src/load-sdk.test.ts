import { HostError } from '@locus/host-contract'
import { describe, expect, it } from 'vitest'
import { lazily, loadAi } from './load-sdk.js'

describe('loading the AI SDK on first use', () => {
  it('a module that cannot be imported is HostError sdk-unavailable naming the package (sentence: an unreachable SDK substrate is sdk-unavailable)', async () => {
    const missing: string = '@locus/no-such-provider'
    const load = lazily(missing, () => import(missing))
    const thrown = await load().catch((error: unknown) => error)
    expect(HostError.isInstance(thrown)).toBe(true)
    expect(thrown).toMatchObject({ failureCause: 'sdk-unavailable' })
    expect((thrown as Error).message).toContain('pnpm add @locus/no-such-provider')
    // Remembered: a second call fails the same way without trying again.
    expect(await load().catch((error: unknown) => error)).toBe(thrown)
  })

  it('the installed SDK loads once and is reused', async () => {
    const first = await loadAi()
    expect(typeof first.generateText).toBe('function')
    expect(await loadAi()).toBe(first)
  })
})
