// Per-call overhead of the AI SDK host around a loopback OpenAI-compatible
// server that answers at once, next to a raw fetch of the same request and to
// the AI SDK's generateText and streamText alone, all measured in the same
// process run; then the time the host adds between the server's first byte of
// a streamed answer and the first-token progress a live view would show.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { measure, printTable } from '@locus/bench-kit'
import type { SessionRequest } from '@locus/runtime'
import { generateText, streamText } from 'ai'
import { createAiSdkHost } from '../src/index.js'
import { createOpenAiCompatibleTestServer } from '../test/openai-compatible-server.js'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const calls = smoke ? 5 : 400
const rounds = smoke ? 1 : 7
const scratch = mkdtempSync(join(tmpdir(), 'locus-host-ai-sdk-bench-'))
const server = await createOpenAiCompatibleTestServer({ fallback: { kind: 'text', text: 'ok' } })
const url = `${server.baseURL}/chat/completions`
const body = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'hi' }] })

const host = createAiSdkHost({
  baseURL: server.baseURL,
  modelId: 'bench-model',
  // A policy with a deadline, as production would set: the retry loop, its timer and the attempt record are all paid.
  retry: { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 30 },
})
const hostNotStreamed = createAiSdkHost({
  baseURL: server.baseURL,
  modelId: 'bench-model',
  retry: { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 30 },
  streaming: false,
})
const hostLoggingAll = createAiSdkHost({ baseURL: server.baseURL, modelId: 'bench-model', retry: { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 30 }, attemptLog: 'always' })
const model = createOpenAICompatible({ name: 'bench', baseURL: server.baseURL }).chatModel('bench-model')
// The host asks a stream for its usage; streamText alone is measured on the same wire.
const streamModel = createOpenAICompatible({ name: 'bench', baseURL: server.baseURL, includeUsage: true }).chatModel('bench-model')
const signal = new AbortController().signal
// The runtime creates each call's transcript directory before opening the session, so the bench does too, outside the timing.
const sessionsNeeded = 3 * calls * (rounds + (smoke ? 0 : 2))
for (let index = 1; index <= sessionsNeeded; index += 1) mkdirSync(join(scratch, `session-${index}`))
let sessionCount = 0
const request = (): SessionRequest => {
  sessionCount += 1
  return {
    runId: 'bench',
    callId: `call-${sessionCount}`,
    logicalCallId: `call-${sessionCount}`,
    attempt: 1,
    agent: 'default',
    agentConfig: undefined,
    label: undefined,
    phase: undefined,
    budgets: { maxToolCalls: 20, maxOutputTokens: 8000, maxAnswerChars: 40_000 },
    tools: [],
    // One artifact sink per session, as the runtime gives each call; llm-attempts.jsonl is written through it, here to a file.
    artifacts: {
      write: (name, text) => {
        const dir = join(scratch, `session-${sessionCount}`)
        mkdirSync(dir, { recursive: true })
        writeFileSync(join(dir, name), text)
      },
    },
  }
}

let sink = 0
const results = await measure(
  [
    {
      name: 'raw fetch + JSON.parse',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
          const parsed = (await response.json()) as { choices: Array<{ message: { content: string } }> }
          sink += parsed.choices[0]?.message.content.length ?? 0
        }
      },
    },
    {
      name: 'AI SDK generateText',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const result = await generateText({ model, messages: [{ role: 'user', content: 'hi' }], maxRetries: 0 })
          sink += result.text.length
        }
      },
    },
    {
      name: 'AI SDK streamText',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const result = streamText({ model: streamModel, messages: [{ role: 'user', content: 'hi' }], maxRetries: 0, onError: () => undefined })
          for await (const part of result.fullStream) sink += part.type.length
          sink += (await result.text).length
        }
      },
    },
    {
      name: 'host: openSession + prompt (streamed)',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const session = await host.openSession(request())
          const result = await session.prompt('hi', { signal })
          sink += result.text.length
        }
      },
    },
    {
      name: 'host, streaming: false',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const session = await hostNotStreamed.openSession(request())
          const result = await session.prompt('hi', { signal })
          sink += result.text.length
        }
      },
    },
    {
      name: 'host, attemptLog: always',
      operations: calls,
      run: async () => {
        for (let index = 0; index < calls; index += 1) {
          const session = await hostLoggingAll.openSession(request())
          const result = await session.prompt('hi', { signal })
          sink += result.text.length
        }
      },
    },
  ],
  { rounds, warmupRounds: smoke ? 0 : 2 },
)
const ratios = printTable(`@locus/host-ai-sdk: one LLM call against a loopback server that answers at once (${calls} calls per round)`, results, 'raw fetch + JSON.parse')
const byName = (name: string) => results.find((result) => result.name === name)
const compare = (label: string, hostedName: string, sdkName: string): void => {
  const sdk = byName(sdkName)
  const hosted = byName(hostedName)
  if (sdk === undefined || hosted === undefined) return
  console.log(`${label}: ${((hosted.nsPerOp - sdk.nsPerOp) / 1000).toFixed(1)} µs per call (${(hosted.nsPerOp / sdk.nsPerOp).toFixed(2)}x; target within 1.10x)`)
}
compare('streamed host overhead over streamText alone', 'host: openSession + prompt (streamed)', 'AI SDK streamText')
compare('unstreamed host overhead over generateText alone', 'host, streaming: false', 'AI SDK generateText')
console.log(`host vs raw fetch: ${(ratios.get('host: openSession + prompt (streamed)') ?? Number.NaN).toFixed(2)}x`)

// Time to first token: a server that stamps the moment it writes the first content chunk, and the
// moment the first-token progress reaches onProgress (the live view), both on performance.now().
let firstByteAt = 0
const ttftServer = createServer((incoming, response) => {
  incoming.resume()
  incoming.on('end', () => {
    response.writeHead(200, { 'content-type': 'text/event-stream' })
    const event = (choices: unknown[]) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'bench-model', choices })}\n\n`
    firstByteAt = performance.now()
    response.write(event([{ index: 0, delta: { role: 'assistant', content: 'first' }, finish_reason: null }]))
    setTimeout(() => {
      response.write(event([{ index: 0, delta: {}, finish_reason: 'stop' }]))
      response.end('data: [DONE]\n\n')
    }, 2)
  })
})
await new Promise<void>((resolve) => ttftServer.listen(0, '127.0.0.1', resolve))
const ttftBase = `http://127.0.0.1:${(ttftServer.address() as AddressInfo).port}/v1`
let shownAt = 0
const ttftHost = createAiSdkHost({
  baseURL: ttftBase,
  modelId: 'bench-model',
  onProgress: (progress) => {
    if (progress.kind === 'first-token') shownAt = performance.now()
  },
})
const ttftModel = createOpenAICompatible({ name: 'bench', baseURL: ttftBase, includeUsage: true }).chatModel('bench-model')
const hostDelays: number[] = []
const sdkDelays: number[] = []
const samples = smoke ? 3 : 200
for (let index = 0; index < samples; index += 1) {
  const session = await ttftHost.openSession(request())
  await session.prompt('hi', { signal })
  hostDelays.push(shownAt - firstByteAt)
  const result = streamText({ model: ttftModel, messages: [{ role: 'user', content: 'hi' }], maxRetries: 0, onError: () => undefined })
  let sdkFirst = 0
  for await (const part of result.fullStream) if (part.type === 'text-delta' && sdkFirst === 0) sdkFirst = performance.now()
  sdkDelays.push(sdkFirst - firstByteAt)
}
const medianOf = (values: number[]) => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? Number.NaN
const hostTtft = medianOf(hostDelays)
const sdkTtft = medianOf(sdkDelays)
console.log(
  `first token shown after the server's first byte: host ${hostTtft.toFixed(3)} ms, streamText alone ${sdkTtft.toFixed(3)} ms, ` +
    `added by the host ${(hostTtft - sdkTtft).toFixed(3)} ms (median of ${samples}; target under 5 ms)`,
)
await new Promise<void>((resolve) => ttftServer.close(() => {
  resolve()
}))
await server.close()
rmSync(scratch, { recursive: true, force: true })
if (sink < 0) console.log(sink)
