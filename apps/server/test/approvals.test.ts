// Approvals over HTTP: the deferred listing shows each deferral's deadline and onTimeout, and each
// answer's deferred_settled names who decided (the key) and how (api, relayed cli, the inspector's ui).
import { parseHTML } from 'linkedom'
import type { JournalLine } from '@locus/journal'
import { createRuntime, defineDeferredTool, defineTool, defineWorkflow } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { parseApiKeys } from '../src/index.js'
import { tempRunsDir, testServer } from './helpers.js'

const APPROVER = 'approver-key-0123456789abcdef'
const RELAY = 'cli-relay-key-0123456789abcdef'
const REVIEWER = 'reviewer-key-0123456789abcdef'
const [approverName, relayName, reviewerName] = parseApiKeys([APPROVER, RELAY, REVIEWER]).map((key) => key.id)

const HOUR = { timeout_secs: 3600, max_retries: 1, backoff_base_secs: 0, backoff_max_secs: 0 }
const Decision = z.object({ approved: z.boolean() })

const fourApprovals = defineWorkflow({
  name: 'four-approvals',
  tools: {
    approve: defineTool({ deferred: true, input: z.object({ who: z.string() }), output: Decision, retry: HOUR, onTimeout: { escalate: { to: 'director', after: '2h' } } }),
    sign: defineDeferredTool({ input: z.object({ who: z.string() }), output: Decision, retry: HOUR, onTimeout: { default: { approved: false } } }),
  },
  async run({ tool }) {
    const decisions = await Promise.all([tool('approve', { who: 'legal' }), tool('approve', { who: 'finance' }), tool('sign', { who: 'security' }), tool('sign', { who: 'ops' })])
    return { ok: decisions.every((decision) => decision.approved), decisions }
  },
})

interface Listed {
  deferredId: string
  args: { who: string }
  expiresAt: string | null
  onTimeout?: unknown
}

describe('approvals over HTTP', () => {
  it('lists deadlines and policies; answers by API key, relayed CLI and the inspector each journal who decided and how', async () => {
    const server = await testServer({ runtime: createRuntime({ workflows: [fourApprovals], runsDir: tempRunsDir() }), apiKeys: [APPROVER, RELAY, REVIEWER] })
    const started = await server.json<{ runId: string }>('/v1/workflows/four-approvals/runs', { method: 'POST', body: JSON.stringify({ input: null }), key: APPROVER })
    const runId = started.body.runId
    let listed: Listed[] = []
    for (let tries = 0; tries < 300 && listed.length < 4; tries += 1) {
      listed = (await server.json<{ deferred: Listed[] }>(`/v1/runs/${runId}/deferred`, { key: APPROVER })).body.deferred
      if (listed.length < 4) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const byWho = new Map(listed.map((open) => [open.args.who, open]))
    expect(byWho.get('legal')).toMatchObject({ onTimeout: { escalate: { to: 'director', after: '2h' } }, expiresAt: expect.stringMatching(/Z$/) })
    expect(byWho.get('ops')).toMatchObject({ onTimeout: { default: { approved: false } } })
    const hourAway = Date.parse(byWho.get('ops')?.expiresAt ?? '') - Date.now()
    expect(hourAway).toBeGreaterThan(3_500_000)
    expect(hourAway).toBeLessThanOrEqual(3_600_000)
    const idOf = (who: string): string => byWho.get(who)?.deferredId ?? ''

    // By API, with the approver's key.
    const byApi = await server.json(`/v1/runs/${runId}/deferred/${idOf('legal')}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: true } }), key: APPROVER })
    expect(byApi.status).toBe(200)
    // Relayed by `locus resolve --server`: via cli, decided by the relaying key.
    const byCli = await server.json(`/v1/runs/${runId}/deferred/${idOf('finance')}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: false }, via: 'cli' }), key: RELAY })
    expect(byCli.status).toBe(200)
    // A client may not claim to be the inspector.
    const claimsUi = await server.json(`/v1/runs/${runId}/deferred/${idOf('security')}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: true }, via: 'ui' }), key: RELAY })
    expect(claimsUi.status).toBe(400)
    // The inspector's form, signed in with the reviewer's key.
    const signIn = await server.request('/login', { method: 'POST', body: new URLSearchParams({ key: REVIEWER, next: `/runs/${runId}` }), headers: { 'content-type': 'application/x-www-form-urlencoded' }, redirect: 'manual' })
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
    const page = (parseHTML(await (await server.request(`/runs/${runId}`, { headers: { cookie } })).text()) as unknown as { document: { querySelector(selector: string): { getAttribute(name: string): string | null } | null } }).document
    const csrf = page.querySelector('form.resolve input[name="_csrf"]')?.getAttribute('value') ?? ''
    expect(csrf).not.toBe('')
    const byUi = await server.request(`/runs/${runId}/deferred/${idOf('security')}/resolve`, {
      method: 'POST',
      body: new URLSearchParams({ result: '{"approved":true}', _csrf: csrf }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      redirect: 'manual',
    })
    expect(byUi.status).toBe(303)
    const last = await server.json(`/v1/runs/${runId}/deferred/${idOf('ops')}/resolve`, { method: 'POST', body: JSON.stringify({ result: { approved: true } }), key: RELAY })
    expect(last.status).toBe(200)

    const result = await server.json<{ result: unknown }>(`/v1/runs/${runId}/result?wait=10`, { key: APPROVER })
    expect(result.body.result).toEqual({ ok: false, decisions: [{ approved: true }, { approved: false }, { approved: true }, { approved: true }] })
    const lines: JournalLine[] = []
    for (const info of await server.runtime.store.listExecutions(runId)) for await (const line of server.runtime.store.readLines(info)) lines.push(line)
    const settled = new Map(lines.flatMap((line) => (line.type === 'deferred_settled' ? [[line.deferredId, line] as const] : [])))
    expect(settled.get(idOf('legal'))).toMatchObject({ outcome: 'resolved', decidedBy: approverName, via: 'api' })
    expect(settled.get(idOf('finance'))).toMatchObject({ outcome: 'resolved', decidedBy: relayName, via: 'cli' })
    expect(settled.get(idOf('security'))).toMatchObject({ outcome: 'resolved', decidedBy: reviewerName, via: 'ui' })
    expect(settled.get(idOf('ops'))).toMatchObject({ outcome: 'resolved', decidedBy: relayName, via: 'api' })
  })
})
