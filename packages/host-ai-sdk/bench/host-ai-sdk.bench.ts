// Per-call overhead of the AI SDK host around a loopback OpenAI-compatible
// server that answers at once, next to a raw fetch of the same request and to
// the AI SDK's generateText alone, all measured in the same process run.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { measure, printTable } from '@locus/bench-kit'
import type { SessionRequest } from '@locus/runtime'
import { generateText } from 'ai'
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
const hostLoggingAll = createAiSdkHost({ baseURL: server.baseURL, modelId: 'bench-model', retry: { timeout_secs: 30, max_retries: 3, backoff_base_secs: 2, backoff_max_secs: 30 }, attemptLog: 'always' })
const model = createOpenAICompatible({ name: 'bench', baseURL: server.baseURL }).chatModel('bench-model')
const signal = new AbortController().signal
// The runtime creates each call's transcript directory before opening the session, so the bench does too, outside the timing.
const sessionsNeeded = 2 * calls * (rounds + (smoke ? 0 : 2))
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
    // One directory per session, as the runtime gives each call; llm-attempts.jsonl is written there.
    transcriptDir: join(scratch, `session-${sessionCount}`),
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
      name: 'host: openSession + prompt',
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
const sdk = results.find((result) => result.name === 'AI SDK generateText')
const hosted = results.find((result) => result.name === 'host: openSession + prompt')
if (sdk !== undefined && hosted !== undefined) {
  console.log(`host overhead over generateText alone: ${((hosted.nsPerOp - sdk.nsPerOp) / 1000).toFixed(1)} µs per call (${(hosted.nsPerOp / sdk.nsPerOp).toFixed(2)}x)`)
}
console.log(`host vs raw fetch: ${(ratios.get('host: openSession + prompt') ?? Number.NaN).toFixed(2)}x`)
await server.close()
rmSync(scratch, { recursive: true, force: true })
if (sink < 0) console.log(sink)
