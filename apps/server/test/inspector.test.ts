import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseHTML } from 'linkedom'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AgentHost, createRuntime, createScriptedHost, defineWorkflow } from '@locus/runtime'
import { createServer } from '../src/index.js'
import { WORKSPACE_MODE_NOTE } from '../src/inspector/render-run.js'
import { tempRunsDir } from './helpers.js'
import { type InspectorRuns, inspectorRuntime, produceInspectorRuns } from './inspector-fixtures.js'

type App = ReturnType<typeof createServer>
/** The part of the DOM the assertions read (the server's tsconfig has no DOM lib). */
interface El {
  readonly textContent: string | null
  readonly className: string
  readonly tagName: string
  getAttribute(name: string): string | null
  hasAttribute(name: string): boolean
  querySelector(selector: string): El | null
  querySelectorAll(selector: string): ArrayLike<El> & Iterable<El>
  contains(other: El | null): boolean
}
type Doc = El
type Node = El | null
const parse = (text: string): Doc => (parseHTML(text) as unknown as { document: Doc }).document

async function page(app: App, path: string, init?: RequestInit): Promise<{ status: number; document: Doc; text: string }> {
  const response = await app.request(path, init)
  const text = await response.text()
  return { status: response.status, document: parse(text), text }
}

const textOf = (element: Node | undefined): string => (element?.textContent ?? '').replace(/\s+/g, ' ').trim()

describe('run inspector pages', () => {
  let app: App
  let runs: InspectorRuns
  let runtime: ReturnType<typeof inspectorRuntime>

  // One runs directory for the whole describe (helpers' tempRunsDir is removed after each test).
  const runsDir = mkdtempSync(join(tmpdir(), 'locus-inspector-'))
  afterAll(() => {
    rmSync(runsDir, { recursive: true, force: true })
  })

  beforeAll(async () => {
    runtime = inspectorRuntime(runsDir)
    app = createServer({ runtime })
    runs = await produceInspectorRuns(runtime)
  })

  it('lists recent runs with disposition, answer outcome, started, duration, calls, retries and gaps, and filters them', async () => {
    const { status, document } = await page(app, '/')
    expect(status).toBe(200)
    const header = [...document.querySelectorAll('table.runs thead th')].map(textOf)
    expect(header).toEqual(['Run', 'Workflow', 'Disposition', 'Answer', 'Started', 'Duration', 'Calls', 'Retries', 'Gaps'])
    const row = document.querySelector(`tr[data-run-id="${runs.research}"]`)
    const cells = [...(row?.querySelectorAll('td') ?? [])].map(textOf)
    expect(cells[1]).toBe('research')
    expect(cells[2]).toContain('Failed')
    expect(cells[3]).toContain('Partial answer')
    expect(cells[4]).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/)
    expect(cells[6]).toBe('4')
    expect(cells[8]).toBe('billing')
    expect(textOf(document.querySelector(`tr[data-run-id="${runs.retried}"] td[data-label="Retries"]`))).toBe('1')
    expect(document.querySelector(`tr[data-run-id="${runs.approval}"] td[data-label="Disposition"]`)?.textContent).toContain('Waiting on a deferred tool')
    const failedOnly = (await page(app, '/?status=failed')).document
    const ids = [...failedOnly.querySelectorAll('tr[data-run-id]')].map((element) => element.getAttribute('data-run-id'))
    expect(ids).toContain(runs.capped)
    expect(ids).not.toContain(runs.approval)
    const byWorkflow = (await page(app, '/?workflow=retried')).document
    expect([...byWorkflow.querySelectorAll('tr[data-run-id]')].map((element) => element.getAttribute('data-run-id'))).toEqual([runs.retried])
    const bad = await page(app, '/?status=sleeping')
    expect(bad.status).toBe(400)
    expect(bad.text).toContain('Unknown status')
  })

  it('never styles failed or partial as success, and names disposition and answer outcome in words', async () => {
    const { document } = await page(app, `/runs/${runs.research}`)
    const disposition = document.querySelector('[data-testid="disposition"] .badge')
    const outcome = document.querySelector('[data-testid="answer-outcome"] .badge')
    expect(textOf(disposition)).toBe('✗ Failed')
    expect(disposition?.className).not.toContain('tone-ok')
    expect(textOf(outcome)).toBe('◐ Partial answer')
    expect(outcome?.className).not.toContain('tone-ok')
    const asks = (await page(app, `/runs/${runs.asks}`)).document
    expect(asks.querySelector('[data-testid="disposition"] .badge')?.className).toContain('tone-ok')
  })

  it('shows the answer text with its caveats outside it, the gaps with criticality and reason, and checked-none-found apart from could-not-check', async () => {
    const { document } = await page(app, `/runs/${runs.research}`)
    const text = document.querySelector('[data-testid="answer-text"]')
    expect(textOf(text)).toBe('Refunds take 14 days; tickets show nothing open.')
    const caveats = document.querySelector('[data-testid="caveats"]')
    expect(caveats?.tagName).toBe('ASIDE')
    expect(textOf(caveats)).toContain('Billing data was not checked')
    expect(text?.contains(caveats)).toBe(false)
    const gap = [...document.querySelectorAll('[data-testid="gaps"] tbody td')].map(textOf)
    expect(gap[0]).toBe('billing')
    expect(gap[1]).toBe('enriching')
    expect(gap[2]).toContain('billing is unreachable')
    const none = document.querySelector('.sources .checked-empty')
    const could = document.querySelector('.sources .could-not-check')
    expect(textOf(none)).toContain('Checked, none found')
    expect(textOf(none)).toContain('tickets')
    expect(textOf(could)).toContain('Could not check')
    expect(textOf(could)).toContain('billing')
    expect(none?.querySelector('.badge')?.className).not.toBe(could?.querySelector('.badge')?.className)
  })

  it('shows workspaceMode with the words that it is not authorization, a sandbox or a tool allowlist', async () => {
    const research = (await page(app, `/runs/${runs.research}`)).document
    const mode = research.querySelector('[data-testid="workspace-mode"]')
    expect(textOf(mode)).toContain('read-only')
    expect(textOf(mode)).toContain(WORKSPACE_MODE_NOTE)
    expect(WORKSPACE_MODE_NOTE).toMatch(/not authorization, not a sandbox and not a tool allowlist/)
    const retried = (await page(app, `/runs/${runs.retried}`)).document
    expect(textOf(retried.querySelector('[data-testid="workspace-mode"]'))).toContain('not declared')
  })

  it('shows a parallel() group with its slots in order, and tool attempts with their deadline', async () => {
    const { document } = await page(app, `/runs/${runs.research}`)
    const group = document.querySelector('#timeline .group-parallel')
    expect(textOf(group?.querySelector('.group-head'))).toContain('parallel()')
    const slots = [...(group?.querySelectorAll(':scope > .slots > .slot') ?? [])]
    expect(slots.map((slot) => slot.getAttribute('data-slot'))).toEqual(['0', '1', '2'])
    // Each slot caught its tool's failure, so all three completed; the billing call inside failed.
    expect(slots.map((slot) => slot.getAttribute('data-state'))).toEqual(['completed', 'completed', 'completed'])
    const billing = document.querySelector('[id="call-tool-1.2.1"]')
    expect(billing?.getAttribute('data-outcome')).toBe('failed')
    expect(textOf(billing)).toContain('billing is unreachable')
    expect(textOf(billing)).toMatch(/deadline: 30\.0 s after its start \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)/)
    // A tool attempt with no deadline says so.
    const staged = (await page(app, `/runs/${runs.staged}`)).document
    expect(textOf(staged.querySelector('[id="call-tool-1.0.1"]'))).toContain('deadline: none (it may take as long as it needs)')
  })

  it('shows every physical attempt of a retried call: callId, the discarded one that threw and its cause, the delay, durations and artifact links', async () => {
    const { document } = await page(app, `/runs/${runs.retried}`)
    const call = document.querySelector('[id="call-call-1"]')
    const attempts = [...(call?.querySelectorAll('.attempt') ?? [])]
    expect(attempts).toHaveLength(2)
    const [first, second] = attempts as [NonNullable<Node>, NonNullable<Node>]
    expect(first.className).toContain('discarded')
    expect(first.getAttribute('data-call-id')).toBe('call-1-a1')
    expect(textOf(first)).toContain('threw')
    expect(textOf(first)).toContain('the turn timed out before an answer')
    expect(textOf(first.querySelector('.retry'))).toMatch(/Discarded because host-turn-timeout; waited \d+ ms before attempt 2\./)
    expect(textOf(first)).toMatch(/attempt 1 of 3 · call-1-a1 · \d+ ms/)
    expect(second.className).not.toContain('discarded')
    expect(textOf(second)).toContain('completed')
    const links = [...second.querySelectorAll('.links a')].map((link) => link.getAttribute('href') ?? '')
    expect(links).toEqual([`/runs/${runs.retried}/executions/${runs.retried}/calls/call-1-a2/transcript`, `/runs/${runs.retried}/executions/${runs.retried}/calls/call-1-a2/envelope`])
    const transcript = await app.request(links[0] as string)
    expect(transcript.status).toBe(200)
    expect(transcript.headers.get('content-type')).toContain('application/json')
    const envelope = await app.request(links[1] as string)
    expect(await envelope.json()).toMatchObject({ callId: 'call-1-a2' })
    const missing = await page(app, `/runs/${runs.retried}/executions/${runs.retried}/calls/call-9-a1/envelope`)
    expect(missing.status).toBe(404)
    expect(missing.text).toContain('No envelope was recorded for call call-9-a1')
  })

  it('shows a hard-stopped group with completed, failed and not-dispatched slots looking different, and the invocation cap hit', async () => {
    const { document } = await page(app, `/runs/${runs.capped}`)
    const group = document.querySelector('#timeline .group')
    expect(group?.getAttribute('data-outcome')).toBe('hard-stopped')
    const states = [...(group?.querySelectorAll('.slot') ?? [])].map((slot) => slot.getAttribute('data-state'))
    expect(states).toEqual(['completed', 'completed', 'failed', 'not-dispatched'])
    const looks = new Set([...(group?.querySelectorAll('.slot') ?? [])].map((slot) => `${slot.className}|${slot.querySelector('.badge')?.className ?? ''}|${textOf(slot.querySelector('.badge'))}`))
    expect(looks.size).toBe(3)
    expect(textOf(group?.querySelector('[data-state="not-dispatched"]'))).toContain('not dispatched')
    const budgets = document.querySelector('#budgets')
    expect(textOf(budgets)).toContain('2 agent attempts')
    expect(textOf(budgets?.querySelector('[data-testid="budget-hits"]'))).toContain('Invocation cap hit')
    expect(textOf(budgets?.querySelector('[data-testid="budget-hits"]'))).toContain('Group hard-stopped')
  })

  it('shows a pipeline() with its slots in order and its failure at its stage', async () => {
    const { document } = await page(app, `/runs/${runs.staged}`)
    const group = document.querySelector('#timeline .group-pipeline')
    expect(textOf(group?.querySelector('.group-head'))).toContain('pipeline()')
    expect(textOf(group?.querySelector('.group-head .stage'))).toBe('failed at stage 2')
    const slots = [...(group?.querySelectorAll('.slot') ?? [])]
    expect(slots.map((slot) => slot.getAttribute('data-state'))).toEqual(['completed', 'failed', 'completed'])
    expect(textOf(slots[1]?.querySelector('.slot-head') ?? null)).toContain('slot 1 (stage 2)')
    expect([...(slots[1]?.querySelectorAll('.call') ?? [])].map((call) => call.getAttribute('data-outcome'))).toEqual(['completed', 'failed'])
  })

  it('shows budget increases', async () => {
    const { document } = await page(app, `/runs/${runs.research}`)
    const row = [...document.querySelectorAll('[data-testid="budget-changes"] tbody td')].map(textOf)
    expect(row).toEqual(['maxToolCalls', 'call', '20', '40', 'call-2', 'per-call override'])
  })

  it('shows a pending deferred tool with CSRF-protected forms, and resolving it through the form completes the run', async () => {
    const view = await page(app, `/runs/${runs.approval}`)
    const article = view.document.querySelector(`[data-deferred-id="${runs.deferredId}"]`)
    expect(textOf(article)).toContain('approve')
    expect(textOf(article)).toContain('"amount": 42')
    const form = article?.querySelector('form.resolve')
    expect(form?.getAttribute('action')).toBe(`/runs/${runs.approval}/deferred/${runs.deferredId}/resolve`)
    const token = form?.querySelector('input[name="_csrf"]')?.getAttribute('value') ?? ''
    expect(token.length).toBeGreaterThan(20)
    expect(view.document.querySelector('main')?.getAttribute('data-events')).toMatch(new RegExp(`^/v1/runs/${runs.approval}/events\\?execution=`))
    const post = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      app.request(`/runs/${runs.approval}/deferred/${runs.deferredId}/resolve`, { method: 'POST', body: new URLSearchParams(body), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } })
    const noToken = await post({ result: '{"approved":true}' })
    expect(noToken.status).toBe(403)
    expect(await noToken.text()).toContain('CSRF token')
    const crossSite = await post({ result: '{"approved":true}', _csrf: token }, { origin: 'https://evil.example' })
    expect(crossSite.status).toBe(403)
    // The tool's output schema is shown beside the form.
    const shownSchema = JSON.parse(textOf(article?.querySelector('[data-testid="output-schema"] pre'))) as { properties?: Record<string, unknown>; required?: string[] }
    expect(shownSchema.properties).toHaveProperty('approved')
    expect(shownSchema.required).toEqual(['approved'])
    // A refused answer comes back as the run page, with the typed text kept in its form and what is wrong beside it.
    const refusedForm = async (response: Response, typed: string, problem: RegExp): Promise<void> => {
      expect(response.status).toBe(400)
      const again = parse(await response.text())
      const form = again.querySelector(`[data-deferred-id="${runs.deferredId}"] form.resolve`)
      expect(textOf(form?.querySelector('[data-testid="answer-problem"]'))).toMatch(problem)
      const textarea = form?.querySelector('textarea')
      // A textarea's content is RCDATA: a browser decodes its character references, which the test's DOM leaves as they are.
      const decoded = (textarea?.textContent ?? '').replace(/&(quot|#39|#x27|lt|gt|amp);/g, (_, name: string) => ({ quot: '"', '#39': "'", '#x27': "'", lt: '<', gt: '>', amp: '&' })[name] ?? '')
      expect(decoded).toBe(typed)
      expect(textarea?.getAttribute('aria-invalid')).toBe('true')
      expect(textarea?.getAttribute('aria-describedby')).toBe(form?.querySelector('[data-testid="answer-problem"]')?.getAttribute('id'))
    }
    await refusedForm(await post({ result: '{approved', _csrf: token }), '{approved', /must be JSON.*stays open/)
    await refusedForm(await post({ result: '{"approved":"yes"}', _csrf: token }), '{"approved":"yes"}', /output schema.*approved.*stays open/)
    const good = await post({ result: '{"approved":true}', _csrf: token })
    expect(good.status).toBe(303)
    expect(good.headers.get('location')).toBe(`/runs/${runs.approval}?answered=${runs.deferredId}`)
    await runtime.live(runs.approval)?.done
    const after = (await page(app, `/runs/${runs.approval}`)).document
    expect(textOf(after.querySelector('[data-testid="disposition"]'))).toContain('Completed')
    expect(after.querySelector('form.resolve')).toBeNull()
    expect(textOf(after.querySelector('#deferred'))).toContain('resolved')
    expect(after.querySelector('main')?.hasAttribute('data-events')).toBe(false)
  })

  it("shows a replay's divergence: which call and which fields changed", async () => {
    const { document } = await page(app, `/runs/${runs.asks}`)
    const replays = document.querySelector('#replays')
    expect(textOf(replays)).toContain('replay-001')
    const divergence = textOf(replays?.querySelector('[data-testid="divergences"] li'))
    expect(divergence).toContain('At call #1')
    expect(divergence).toContain('call-1')
    expect(divergence).toContain('changed prompt')
    const replayPage = (await page(app, `/runs/${runs.asks}?execution=replay-001`)).document
    expect(textOf(replayPage.querySelector('#replays'))).toContain('This replay diverged from its recording')
    expect(textOf(replayPage.querySelector('nav.executions'))).toContain(runs.asks)
  })

  it('shows the raw journal, filterable by line type', async () => {
    const all = (await page(app, `/runs/${runs.retried}`)).document
    const types = [...all.querySelectorAll('#journal-lines tr')].map((row) => row.getAttribute('data-type'))
    expect(types[0]).toBe('run_start')
    expect(types).toContain('retry')
    expect(types.at(-1)).toBe('run_end')
    const filtered = (await page(app, `/runs/${runs.retried}?type=retry`)).document
    expect([...filtered.querySelectorAll('#journal-lines tr')].map((row) => row.getAttribute('data-type'))).toEqual(['retry'])
    expect(filtered.querySelector('#journal-type option[selected]')?.getAttribute('value')).toBe('retry')
  })

  it('escapes journal text, answers unknown runs with an HTML 404, and is keyboard reachable (skip link, labelled controls)', async () => {
    const headers = (await app.request(`/runs/${runs.research}`)).headers
    expect(headers.get('content-security-policy')).toContain("default-src 'self'")
    expect(headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    const missing = await page(app, '/runs/no-such-run')
    expect(missing.status).toBe(404)
    expect(missing.text).toContain('<!doctype html>')
    const { document, text } = await page(app, `/runs/${runs.approval}`)
    expect(text).not.toContain('<script>alert')
    expect(document.querySelector('a[href="#main"]')).not.toBeNull()
    for (const control of document.querySelectorAll('main textarea, main select, main input:not([type="hidden"]):not([type="checkbox"])')) {
      expect(document.querySelector(`label[for="${control.getAttribute('id') ?? ''}"]`)).not.toBeNull()
    }
    expect(document.querySelectorAll('main section[aria-labelledby]').length).toBeGreaterThan(3)
  })
})

describe('run inspector with API keys', () => {
  const full = 'inspector-full-key-0123456789'
  const reader = 'inspector-read-key-0123456789'

  it('sends a browser to sign in, keeps a signed session cookie, and needs deferred:resolve to answer', async () => {
    const runtime = inspectorRuntime(tempRunsDir())
    const app = createServer({ runtime, apiKeys: [full, `${reader}:runs:read`] })
    const started = await runtime.start('approval')
    const anonymous = await app.request(`/runs/${started.runId}`)
    expect(anonymous.status).toBe(303)
    expect(anonymous.headers.get('location')).toBe(`/login?next=${encodeURIComponent(`/runs/${started.runId}`)}`)
    const wrong = await app.request('/login', { method: 'POST', body: new URLSearchParams({ key: 'not-a-key-at-all-000000', next: '/' }), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(wrong.status).toBe(401)
    const signIn = await app.request('/login', { method: 'POST', body: new URLSearchParams({ key: reader, next: `/runs/${started.runId}` }), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(signIn.status).toBe(303)
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
    expect(signIn.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/)
    expect(cookie).not.toContain(reader)
    let deferredId: string | undefined
    for (let tries = 0; tries < 500 && deferredId === undefined; tries += 1) {
      deferredId = (await runtime.pendingDeferrals(started.runId))[0]?.deferredId
      if (deferredId === undefined) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const view = await app.request(`/runs/${started.runId}`, { headers: { cookie } })
    expect(view.status).toBe(200)
    const document = parse(await view.text())
    expect(document.querySelector('main')?.getAttribute('data-events')).toMatch(/&token=v1\./)
    const token = document.querySelector('form.resolve input[name="_csrf"]')?.getAttribute('value') ?? ''
    const denied = await app.request(`/runs/${started.runId}/deferred/${deferredId ?? ''}/resolve`, {
      method: 'POST',
      body: new URLSearchParams({ result: '{"approved":true}', _csrf: token }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    })
    expect(denied.status).toBe(403)
    expect(await denied.text()).toContain('deferred:resolve')
    const bearer = await app.request(`/runs/${started.runId}/deferred/${deferredId ?? ''}/reject`, {
      method: 'POST',
      body: new URLSearchParams({ error: 'not approved', _csrf: parse(await (await app.request(`/runs/${started.runId}`, { headers: { authorization: `Bearer ${full}` } })).text()).querySelector('form.reject input[name="_csrf"]')?.getAttribute('value') ?? '' }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${full}` },
    })
    expect(bearer.status).toBe(303)
    await started.done.catch(() => undefined)
  })
})

describe('LLM attempts inside an agent attempt', () => {
  it("lists each LLM request a host reports for an agent attempt: try n of m, outcome, duration and the delay before the next", async () => {
    // A host that reports its own retries, as a provider host does: one 429 then a success.
    const host: AgentHost = {
      name: 'reporting',
      openSession: () => ({
        prompt: () =>
          Promise.resolve({
            text: 'answered on the second request',
            stopReason: 'end' as const,
            llmAttempts: [
              { model: 'm-1', turn: 1, step: 1, attempt: 1, maxAttempts: 3, outcome: 'failed' as const, code: 'rate_limited', status: 429, error: 'slow down', retryable: true, delayBeforeNextMs: 250, durationMs: 40, streamed: false },
              { model: 'm-1', turn: 1, step: 1, attempt: 2, maxAttempts: 3, outcome: 'succeeded' as const, durationMs: 90, streamed: true },
            ],
          }),
        transcript: () => [],
      }),
    }
    const asked = defineWorkflow({ name: 'asked', run: async ({ agent }) => ({ ok: true, answer: (await agent('one question')).answer }) })
    const runtime = createRuntime({ workflows: [asked], host, runsDir: tempRunsDir() })
    const handle = await runtime.start('asked')
    await handle.done
    const app = createServer({ runtime })
    const { document } = await page(app, `/runs/${handle.runId}`)
    const rows = [...document.querySelectorAll('[data-call-id="call-1-a1"] table.llm tbody tr')].map((row) => [...row.querySelectorAll('td')].map(textOf))
    expect(rows).toEqual([
      ['1.1', '1 of 3', 'm-1', '✗ failed slow down', '40 ms', '250 ms'],
      ['1.1', '2 of 3', 'm-1', '✓ succeeded', '90 ms', '—'],
    ])
  })
})

describe('a run that hit its deadline', () => {
  it('says the deadline was hit, with the deadline the run had', async () => {
    const slow = defineWorkflow({
      name: 'slow',
      run: async ({ agent }) => {
        await agent('first, slowly')
        return { ok: true, answer: (await agent('second')).answer }
      },
    })
    const host = createScriptedHost({ rules: [{ match: { prompt: 'first, slowly' }, steps: [{ text: 'done', delayMs: 150 }] }, { steps: [{ text: 'fine' }] }] })
    const runtime = createRuntime({ workflows: [slow], host, runsDir: tempRunsDir() })
    const handle = await runtime.start('slow', { budgets: { deadlineMs: 50 } })
    await handle.done.catch(() => undefined)
    const { document } = await page(createServer({ runtime }), `/runs/${handle.runId}`)
    const budgets = document.querySelector('#budgets')
    expect(textOf(budgets)).toMatch(/Deadline\s*50 ms/)
    expect(textOf(budgets?.querySelector('[data-testid="budget-hits"]') ?? null)).toContain('Deadline hit')
    expect(textOf(document.querySelector('[data-testid="disposition"]'))).toContain('Failed')
  })
})
