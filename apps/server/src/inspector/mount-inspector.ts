import { validateRunId } from '@locus/journal'
import { readOutcomeReport } from '@locus/partial'
import { type PendingDeferral, type RunDescription, type Runtime, type StoredExecution, type StoredRun, describeStoredRun, heldStoredRun } from '@locus/runtime'
import { ARTIFACT_KEYS, type ExecutionInfo, type RunRow, type RunStore } from '@locus/store'
import type { Context } from 'hono'
import { z } from 'zod'
import { ApiError, toApiError } from '../errors.js'
import { clientStore } from '../redact.js'
import type { RouteContext } from '../route-context.js'
import type { Env } from '../server-options.js'
import { type LiveState, hasEnded, rowListItem, rowStatusOf, statusOfExecution } from '../run-resource.js'
import { RUN_STATUSES, type RunStatus } from '../schemas.js'
import { type SafeHtml, html } from './html.js'
import { INSPECTOR_SCRIPT, page } from './layout.js'
import { type ExecutionModel, readExecutionModel, refreshExecutionModel } from './run-model.js'
import { type AnswerForm, type RunPageInput, renderRunBody } from './render-run.js'
import { renderReportBody } from './render-report.js'
import { renderScheduleBody, renderSchedulesBody } from './render-schedules.js'
import { SESSION_COOKIE, SESSION_TTL_MS, type Viewer, createInspectorSessions, requireScope } from './session.js'
import { answerWords, badge, dispositionWords, duration, when } from './words.js'

/** The store of an execution no worker has created yet: no line, no artifact. */
const NOTHING_RECORDED = {
  async *readLines() {
    // Nothing recorded yet.
  },
  readArtifact: () => Promise.resolve(undefined),
} as unknown as RunStore

const RUNS_PER_PAGE = 50
const DAY_MS = 24 * 60 * 60 * 1000
/** The longest report window, in days. */
const MAX_REPORT_DAYS = 3650
/** Pages run only the inspector's own script, post forms only to this server, and are never framed. */
const PAGE_HEADERS = {
  'content-security-policy': "default-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
}
/** Folded execution models kept between requests (an ended one as it is, a live one to be brought up to date): this many, least recently used out first. */
const CACHED_MODELS = 8
const enc = encodeURIComponent

/** Slot records a schedule's page shows, newest first. */
const SLOTS_SHOWN = 200

function pageNumber(value: string | undefined): number {
  const parsed = Number(value ?? '0')
  return Number.isSafeInteger(parsed) && parsed >= 0 ? parsed : 0
}

function errorPage(status: number, title: string, message: string, back?: string): Response {
  const body = html`<h1>${title}</h1><p role="alert">${message}</p>${back === undefined ? '' : html`<p><a href="${back}">Go back</a></p>`}<p><a href="/">All runs</a></p>`
  return new Response(page({ title }, body), { status, headers: { 'content-type': 'text/html; charset=utf-8', ...PAGE_HEADERS } })
}

/** A model of a stored execution for the status helpers (they read only `info`, `view` and `resultFile`). */
function asStored(model: ExecutionModel): StoredExecution {
  return { info: model.info, view: model.view, resultFile: model.resultFile } as StoredExecution
}

/**
 * The run inspector: `GET /` lists recent runs, `GET /runs/{id}` shows one,
 * server-rendered HTML with one small script that follows a live run's event
 * stream. Forms answer pending deferred tools (CSRF-checked, scope
 * `deferred:resolve`). See docs/inspector.md.
 */
export function mountInspector(routes: RouteContext): void {
  const { app, runtime } = routes
  // Pages show lines and artifacts without stacks or paths; the store keeps them whole.
  const readable = clientStore(runtime.store)
  const sessions = createInspectorSessions(routes.options.apiKeys, routes.options.now ?? Date.now)

  /** Runs a page handler: the viewer must be signed in when keys are configured; errors become HTML pages. */
  const pageRoute =
    (handler: (c: Context<Env>, viewer: Viewer) => Promise<Response>) =>
    async (c: Context<Env>): Promise<Response> => {
      try {
        const viewer = sessions.viewer(c)
        if (viewer === undefined) return c.redirect(`/login?next=${enc(c.req.path + (new URL(c.req.url).search || ''))}`, 303)
        return await handler(c, viewer)
      } catch (error) {
        const api = toApiError(error, routes.report)
        const body = api.body()
        return errorPage(api.status, api.status === 404 ? 'Not found' : api.status === 401 || api.status === 403 ? 'Not allowed' : 'Something went wrong', body.error.message, c.req.header('referer'))
      }
    }

  const respond = (c: Context, markup: string, status = 200): Response => c.html(markup, status as 200, PAGE_HEADERS)

  /**
   * Execution models by execution, the most recently used kept: an ended one
   * (its run_end and result.json both written) is served as it is; any other
   * is brought up to date by reading only the lines written since it was
   * folded ({@link refreshExecutionModel}), one refresh at a time.
   */
  const models = new Map<string, { model: ExecutionModel; refreshing: Promise<ExecutionModel> | undefined }>()
  const isFinal = (model: ExecutionModel): boolean => model.view.runEnd !== undefined && model.resultFile !== undefined
  async function modelOf(info: ExecutionInfo): Promise<ExecutionModel> {
    const key = `${info.runId}\n${info.executionId}`
    const entry = models.get(key)
    if (entry !== undefined) {
      models.delete(key)
      models.set(key, entry)
      if (isFinal(entry.model)) return entry.model
      if (entry.refreshing !== undefined) return entry.refreshing
      entry.refreshing = refreshExecutionModel(readable, entry.model).finally(() => {
        entry.refreshing = undefined
      })
      entry.model = await entry.refreshing
      return entry.model
    }
    const model = await readExecutionModel(readable, info)
    models.set(key, { model, refreshing: undefined })
    for (const oldest of models.keys()) {
      if (models.size <= CACHED_MODELS) break
      models.delete(oldest)
    }
    return model
  }

  const signedIn = (viewer: Viewer): { principal: string; csrf: string } | undefined => (viewer.viaCookie ? { principal: viewer.principal, csrf: sessions.csrf(viewer) } : undefined)

  /** Rejects a form post from another origin or without the viewer's CSRF token. */
  function checkForm(c: Context, viewer: Viewer, token: string | undefined): void {
    const origin = c.req.header('origin')
    if (origin !== undefined && origin !== 'null' && origin !== new URL(c.req.url).origin) {
      throw new ApiError('forbidden', `This form was posted from ${origin}, another origin; post it from the inspector's own page.`)
    }
    if (!sessions.checkCsrf(viewer, token)) throw new ApiError('forbidden', 'The form is missing its CSRF token or the token is stale; reload the page and submit it again.')
  }

  app.get('/inspector.js', (c) => c.body(INSPECTOR_SCRIPT, 200, { 'content-type': 'text/javascript; charset=utf-8' }))

  app.get('/login', (c) => {
    const next = c.req.query('next') ?? '/'
    if (!sessions.keysConfigured) return c.redirect(safeNext(next), 303)
    return respond(c, loginPage(next, undefined))
  })

  app.post('/login', async (c) => {
    const form = await c.req.parseBody()
    const next = safeNext(typeof form.next === 'string' ? form.next : '/')
    const origin = c.req.header('origin')
    if (origin !== undefined && origin !== 'null' && origin !== new URL(c.req.url).origin) return respond(c, loginPage(next, 'Sign in from the inspector’s own page.'), 403)
    try {
      const cookie = sessions.signIn(typeof form.key === 'string' ? form.key : '')
      const secure = new URL(c.req.url).protocol === 'https:' ? '; Secure' : ''
      c.header('set-cookie', `${SESSION_COOKIE}=${cookie}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_MS / 1000}${secure}`)
      return c.redirect(next, 303)
    } catch (error) {
      const message = error instanceof ApiError ? error.message : 'That key was not accepted.'
      return respond(c, loginPage(next, message), 401)
    }
  })

  app.post('/logout', pageRoute(async (c, viewer) => {
    const form = await c.req.parseBody()
    checkForm(c, viewer, typeof form._csrf === 'string' ? form._csrf : undefined)
    c.header('set-cookie', `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`)
    return c.redirect('/login', 303)
  }))

  app.get('/', pageRoute(async (c, viewer) => {
    const workflow = c.req.query('workflow') || undefined
    const status = c.req.query('status') || undefined
    if (status !== undefined && !(RUN_STATUSES as readonly string[]).includes(status)) {
      throw new ApiError('invalid_request', `Unknown status "${status}"; pick one of ${RUN_STATUSES.join(', ')}.`)
    }
    const offset = pageNumber(c.req.query('offset'))
    const rows: SafeHtml[] = []
    const workflows = new Set<string>(runtime.workflows.keys())
    // The summary rows pick the page (a listing reads rows, never a journal); only the runs shown are folded.
    const picked = await pickRows(runtime, { workflow, status: status as RunStatus | undefined, skip: offset, take: RUNS_PER_PAGE + 1, liveState: routes.liveState })
    const more = picked.length > RUNS_PER_PAGE
    for (const row of picked.slice(0, RUNS_PER_PAGE)) {
      let stored: StoredRun
      try {
        stored = await routes.load(row.runId)
      } catch {
        continue
      }
      workflows.add(stored.summary.workflow)
      // Open deferrals, and one more while it sleeps on a timer: what it waits on from outside its calls.
      const pending = hasEnded(stored.latest) ? 0 : (await runtime.pendingDeferrals(row.runId)).length + (stored.view.sleepingUntil === undefined ? 0 : 1)
      rows.push(runRow(stored, statusOfExecution(stored.latest, routes.liveState(row.runId), pending)))
    }
    const query = (next: number): string => `/?${[workflow === undefined ? '' : `workflow=${enc(workflow)}`, status === undefined ? '' : `status=${enc(status)}`, `offset=${next}`].filter((part) => part !== '').join('&')}`
    const body = html`<h1>Recent runs</h1>
<form method="get" action="/" class="filter" aria-label="Filter runs">
<label for="f-workflow">Workflow</label><select id="f-workflow" name="workflow"><option value="">all workflows</option>${[...workflows].sort().map((name) => html`<option value="${name}"${name === workflow ? ' selected' : ''}>${name}</option>`)}</select>
<label for="f-status">Status</label><select id="f-status" name="status"><option value="">all statuses</option>${RUN_STATUSES.map((name) => html`<option value="${name}"${name === status ? ' selected' : ''}>${name}</option>`)}</select>
<button type="submit">Filter</button>
</form>
${rows.length === 0 ? html`<p>No runs${workflow === undefined && status === undefined ? ' yet. Start one with <code>locus run</code> or POST /v1/workflows/{name}/runs' : ' match this filter'}.</p>` : html`<div class="scroll"><table class="runs" data-testid="runs"><thead><tr><th scope="col">Run</th><th scope="col">Workflow</th><th scope="col">Disposition</th><th scope="col">Answer</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Calls</th><th scope="col">Retries</th><th scope="col">Gaps</th></tr></thead><tbody>${rows}</tbody></table></div>`}
<nav class="pager" aria-label="Run pages">${offset > 0 ? html`<a href="${query(Math.max(0, offset - RUNS_PER_PAGE))}">Newer runs</a> ` : ''}${more ? html`<a href="${query(offset + RUNS_PER_PAGE)}">Older runs</a>` : ''}</nav>`
    return respond(c, page({ title: 'Runs', signedIn: signedIn(viewer) }, body))
  }))

  app.get('/report', pageRoute(async (c, viewer) => {
    const text = c.req.query('days') ?? '30'
    const days = Number(text)
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(days) || days < 1 || days > MAX_REPORT_DAYS) {
      throw new ApiError('invalid_request', `days must be a whole number of days from 1 to ${MAX_REPORT_DAYS}, such as /report?days=30; got "${text}".`)
    }
    const outcomes = routes.options.outcomes
    if (outcomes === undefined) {
      const body = html`<h1>Outcome report</h1><p>This server has no outcome store to read. <code>locus serve</code> gives it the one runs record in (<code>outcomes.sqlite</code> in the runs directory, or PostgreSQL with <code>LOCUS_DATABASE_URL</code>); a server built with <code>createServer</code> takes it as the <code>outcomes</code> option.</p>`
      return respond(c, page({ title: 'Outcome report', signedIn: signedIn(viewer) }, body))
    }
    const now = routes.options.now?.() ?? Date.now()
    const report = await readOutcomeReport(outcomes, new Date(now - days * DAY_MS))
    const where = outcomes.kind === 'sqlite' ? 'the SQLite outcome store' : 'the PostgreSQL outcome store'
    return respond(c, page({ title: 'Outcome report', signedIn: signedIn(viewer) }, renderReportBody(report, days, where)))
  }))

  const scheduleStore = (): NonNullable<RouteContext['options']['schedules']> => {
    const schedules = routes.options.schedules
    if (schedules === undefined) throw new ApiError('not_found', 'This server keeps no schedules: its store has none.')
    return schedules
  }

  app.get('/schedules', pageRoute(async (c, viewer) => {
    const schedules = scheduleStore()
    const rows = []
    for (const state of await schedules.listSchedules()) rows.push({ state, last: (await schedules.listSlots(state.schedule.id, { limit: 1 }))[0] })
    return respond(c, page({ title: 'Schedules', signedIn: signedIn(viewer) }, renderSchedulesBody(rows)))
  }))

  app.get('/schedules/:id', pageRoute(async (c, viewer) => {
    const schedules = scheduleStore()
    const id = c.req.param('id') ?? ''
    const state = await schedules.readSchedule(id).catch(() => undefined)
    if (state === undefined) throw new ApiError('not_found', `No schedule "${id}"; /schedules lists them.`)
    const slots = await schedules.listSlots(id, { limit: SLOTS_SHOWN })
    return respond(c, page({ title: `Schedule ${id}`, signedIn: signedIn(viewer) }, renderScheduleBody(state, slots)))
  }))

  async function executionModel(runId: string, execution: string | undefined): Promise<{ infos: ExecutionInfo[]; info: ExecutionInfo; model: ExecutionModel }> {
    const infos = await runtime.store.listExecutions(runId)
    let info: ExecutionInfo | undefined
    if (execution === undefined) info = infos.filter((candidate) => candidate.kind === 'root' || candidate.kind === 'resume').at(-1) ?? infos[0]
    else info = infos.find((candidate) => candidate.executionId === execution)
    if (info === undefined && infos.length === 0 && (execution === undefined || execution === runId)) {
      // A run queued for workers: nothing recorded until a worker creates its root, whose id is the run id.
      const root: ExecutionInfo = { runId, executionId: runId, kind: 'root', location: `queued:${runId}` }
      return { infos: [root], info: root, model: await readExecutionModel(NOTHING_RECORDED, root) }
    }
    if (info === undefined) {
      throw new ApiError('not_found', execution === undefined ? `Run "${runId}" has no execution yet.` : `Run "${runId}" has no execution "${execution}"; it has ${infos.map((candidate) => candidate.executionId).join(', ')}.`)
    }
    const live = runtime.live(runId)
    if (live?.executionId === info.executionId) live.flush()
    return { infos, info, model: await modelOf(info) }
  }

  /**
   * `runtime.describe` of the run whose execution `info` the page shows:
   * itself when this process runs the run (its live fold, no read), else the
   * description of the stored run the page already read (`stored`, or the
   * one execution's `model`) with the run's summary row.
   */
  async function describeRun(runId: string, info: ExecutionInfo, model: ExecutionModel, stored: StoredRun | undefined): Promise<RunDescription> {
    const live = runtime.live(runId)
    if (live !== undefined && live.executionId === (stored?.latest.info.executionId ?? info.executionId)) return runtime.describe(runId)
    return describeStoredRun(runtime.store, runId, () => Promise.resolve(stored ?? heldStoredRun(info, model.view)))
  }

  /**
   * The page of run `:id` (and `?execution=`), answered with `httpStatus`. `answer`
   * is a deferral's form as the viewer sent it and why it was refused: the
   * page keeps the typed text in that form and says what is wrong beside it.
   */
  async function showRun(c: Context, viewer: Viewer, answer?: AnswerForm, httpStatus = 200): Promise<Response> {
    const runId = validateRunIdOr404(c.req.param('id') ?? '')
    const execution = c.req.query('execution') || undefined
    const { infos, info, model } = await executionModel(runId, execution)
    const liveState = routes.liveState(runId)
    const resumes = infos.filter((candidate) => candidate.kind === 'root' || candidate.kind === 'resume')
    const latestId = resumes.at(-1)?.executionId
    const showsLatest = info.executionId === latestId
    const ended = hasEnded(asStored(model))
    // A run of several executions: its own figures add them all up, beside the shown execution's.
    const stored = resumes.length > 1 && resumes.some((candidate) => candidate.executionId === info.executionId) ? await routes.load(runId) : undefined
    const shownAt = stored?.executions.findIndex((candidate) => candidate.info.executionId === info.executionId) ?? -1
    // The run as runtime.describe has it (status, what it waits on, its figures): from the live fold when this process
    // runs it, else from the folds read here and the run's summary row, never a second read of a journal.
    const described = showsLatest || stored !== undefined ? await describeRun(runId, info, model, stored) : undefined
    const pending = !ended && showsLatest && (described?.waitingOn.length ?? 0) > 0 ? await runtime.pendingDeferrals(runId) : []
    const cancelling = liveState.cancelling && liveState.liveExecutionId === info.executionId
    const status =
      showsLatest && described !== undefined && !cancelling
        ? described.status
        : statusOfExecution(asStored(model), liveState, 0, shownAt < 0 ? undefined : stored?.executions[shownAt + 1])
    const run = stored === undefined ? undefined : described
    const replayInfos = info.kind === 'root' || info.kind === 'resume' ? infos.filter((candidate) => candidate.kind === 'replay') : []
    const replays = await Promise.all(
      replayInfos.map(async (replay) => {
        const replayModel = await modelOf(replay)
        return { executionId: replay.executionId, divergences: replayModel.view.divergences, model: replayModel }
      }),
    )
    const typeQuery = c.req.query('type') || undefined
    let eventsUrl: string | undefined
    let tokensUrl: string | undefined
    if (!ended) {
      const token = sessions.keysConfigured ? `&token=${enc(routes.eventTokens.issue(runId).token)}` : ''
      eventsUrl = `/v1/runs/${enc(runId)}/events?execution=${enc(info.executionId)}&after=${model.view.lastSeq}${token}`
      // The model's text as it streams, from the store's token stream (which outlives this server), when the store keeps one.
      if (runtime.store.streams !== undefined) tokensUrl = `/v1/runs/${enc(runId)}/stream?format=raw${token}`
    }
    const input: RunPageInput = {
      runId,
      model,
      run,
      executions: infos.map((candidate) => ({ executionId: candidate.executionId, kind: candidate.kind, status: candidate.executionId === info.executionId ? status : undefined })),
      status,
      pending,
      replays,
      csrf: sessions.csrf(viewer),
      eventsUrl,
      page: pageNumber(c.req.query('page')),
      journalType: typeQuery,
      journalPage: pageNumber(c.req.query('journalPage')),
      execution,
      outputSchemas: outputSchemasOf(model.view.workflow, pending),
      tokens: tokensUrl !== undefined,
      answer,
    }
    return respond(c, page({ title: `Run ${runId}`, eventsUrl, tokensUrl, signedIn: signedIn(viewer) }, renderRunBody(input)), httpStatus)
  }

  /** The JSON Schema of each pending deferral's tool output, by tool name, when the tool declares one (the run's workflow first, then any registered one). */
  function outputSchemasOf(workflow: string | undefined, pending: readonly PendingDeferral[]): ReadonlyMap<string, string> {
    const schemas = new Map<string, string>()
    for (const deferral of pending) {
      if (schemas.has(deferral.tool)) continue
      const candidates = [runtime.workflows.get(workflow ?? ''), ...runtime.workflows.values()]
      const output = candidates.map((definition) => (definition?.tools?.[deferral.tool] as { output?: z.ZodType } | undefined)?.output).find((found) => found !== undefined)
      if (output === undefined) continue
      try {
        schemas.set(deferral.tool, JSON.stringify(z.toJSONSchema(output, { io: 'input', unrepresentable: 'any' }), null, 2))
      } catch {
        // A schema JSON Schema cannot express (a transform, say) is left out; the answer is still checked against it.
      }
    }
    return schemas
  }

  app.get('/runs/:id', pageRoute((c, viewer) => showRun(c, viewer)))

  const answerRoute = (kind: 'resolve' | 'reject') =>
    pageRoute(async (c, viewer) => {
      const form = await c.req.parseBody()
      checkForm(c, viewer, typeof form._csrf === 'string' ? form._csrf : undefined)
      requireScope(viewer, 'deferred:resolve')
      const runId = validateRunIdOr404(c.req.param('id') ?? '')
      const deferredId = c.req.param('deferredId') ?? ''
      const back = `/runs/${enc(runId)}#deferred`
      await routes.load(runId)
      let outcome
      if (kind === 'resolve') {
        const text = typeof form.result === 'string' ? form.result : ''
        let result: unknown
        try {
          result = JSON.parse(text)
        } catch (error) {
          return showRun(c, viewer, { deferredId, text, problem: `The result must be JSON (e.g. {"approved": true}): ${error instanceof Error ? error.message : String(error)}. Deferral ${deferredId} stays open.` }, 400)
        }
        outcome = await runtime.answerDeferred(runId, deferredId, { kind: 'resolved', result: result as never, decidedBy: viewer.principal, via: 'ui' })
        if (outcome.status === 'invalid') {
          return showRun(c, viewer, { deferredId, text, problem: `The result does not fit the tool's output schema: ${outcome.issues.join('; ')}. Deferral ${deferredId} stays open.` }, 400)
        }
      } else {
        const error = typeof form.error === 'string' ? form.error.trim() : ''
        if (error === '') return errorPage(400, 'A reason is needed', `Say why the call is rejected; deferral ${deferredId} stays open.`, back)
        outcome = await runtime.answerDeferred(runId, deferredId, { kind: 'rejected', error, retryable: form.retryable === 'true', decidedBy: viewer.principal, via: 'ui' })
      }
      if (outcome.ok) return c.redirect(`/runs/${enc(runId)}?answered=${enc(deferredId)}`, 303)
      if (outcome.status === 'invalid') return errorPage(400, 'The result does not fit', `The result does not fit the tool's output schema (${outcome.issues.join('; ')}); deferral ${deferredId} stays open.`, back)
      return errorPage(outcome.status === 'conflict' ? 409 : 404, outcome.status === 'conflict' ? 'Already answered' : 'Not found', outcome.message, back)
    })
  app.post('/runs/:id/deferred/:deferredId/resolve', answerRoute('resolve'))
  app.post('/runs/:id/deferred/:deferredId/reject', answerRoute('reject'))

  const artifact = (name: 'transcript' | 'envelope') =>
    pageRoute(async (c) => {
      const runId = validateRunIdOr404(c.req.param('id') ?? '')
      const executionId = c.req.param('execution') ?? ''
      const callId = validateRunIdOr404(c.req.param('callId') ?? '')
      const info = (await runtime.store.listExecutions(runId)).find((candidate) => candidate.executionId === executionId)
      if (info === undefined) throw new ApiError('not_found', `Run "${runId}" has no execution "${executionId}".`)
      const key = name === 'transcript' ? ARTIFACT_KEYS.callTranscriptFile(callId) : ARTIFACT_KEYS.callEnvelope(callId)
      const text = await readable.readArtifact(info, key)
      if (text === undefined) {
        throw new ApiError('not_found', `No ${name} was recorded for call ${callId}: an attempt that threw before its child answered, a replayed call or a tool call has none.`)
      }
      return c.body(text, 200, { 'content-type': 'application/json; charset=utf-8' })
    })
  app.get('/runs/:id/executions/:execution/calls/:callId/transcript', artifact('transcript'))
  app.get('/runs/:id/executions/:execution/calls/:callId/envelope', artifact('envelope'))
}

function validateRunIdOr404(id: string): string {
  try {
    return validateRunId(id)
  } catch {
    throw new ApiError('not_found', `No run "${id}": run ids are letters, digits, ".", "_" and "-".`)
  }
}

/** A sign-in redirect target on this server only. */
function safeNext(next: string): string {
  return next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/'
}

function loginPage(next: string, problem: string | undefined): string {
  const body = html`<h1>Sign in</h1>
<p>This server needs an API key. Paste a key with the <code>runs:read</code> scope (and <code>deferred:resolve</code> to answer deferred tools). The browser keeps a signed session cookie for 8 hours, never the key.</p>
${problem === undefined ? '' : html`<p role="alert" class="error">${problem}</p>`}
<form method="post" action="/login"><input type="hidden" name="next" value="${safeNext(next)}"><label for="key">API key</label><input id="key" name="key" type="password" autocomplete="current-password" required><button type="submit">Sign in</button></form>`
  return page({ title: 'Sign in' }, body)
}

function runRow(stored: StoredRun, status: string): SafeHtml {
  // The run's own figures: every execution added up.
  const summary = stored.summary
  const disposition = stored.latest.view.runEnd?.disposition ?? stored.latest.resultFile?.disposition
  const d = dispositionWords(disposition, status, stored.view.sleepingUntil)
  const a = answerWords(summary.answerOutcome)
  return html`<tr data-run-id="${stored.runId}"><td data-label="Run"><a href="/runs/${enc(stored.runId)}">${stored.runId}</a></td><td data-label="Workflow">${summary.workflow}</td><td data-label="Disposition">${badge(d.tone, d.words)}</td><td data-label="Answer">${summary.answerOutcome === undefined ? '—' : badge(a.tone, a.words)}</td><td data-label="Started">${when(summary.startedAt)}</td><td data-label="Duration">${duration(summary.durationMs)}</td><td data-label="Calls">${summary.agentCalls + summary.toolCalls}</td><td data-label="Retries">${summary.retries}</td><td data-label="Gaps">${summary.gaps.length === 0 ? '0' : summary.gaps.map((gap) => gap.tool).join(', ')}</td></tr>`
}

/** The rows of one inspector page: `skip` matching rows, then up to `take`, paging through the store's summary rows. */
async function pickRows(
  runtime: Runtime,
  want: { readonly workflow: string | undefined; readonly status: RunStatus | undefined; readonly skip: number; readonly take: number; readonly liveState: (runId: string) => LiveState },
): Promise<RunRow[]> {
  const rowStatus = rowStatusOf(want.status)
  if (rowStatus === null) return []
  const picked: RunRow[] = []
  let matched = 0
  let cursor: string | undefined
  do {
    const page = await runtime.list({
      limit: 200,
      ...(want.workflow === undefined ? {} : { workflow: want.workflow }),
      ...(rowStatus === undefined ? {} : { status: rowStatus }),
      ...(cursor === undefined ? {} : { cursor }),
    })
    for (const row of page.rows) {
      if (want.status !== undefined && rowListItem(row, want.liveState(row.runId)).status !== want.status) continue
      matched += 1
      if (matched <= want.skip) continue
      picked.push(row)
      if (picked.length >= want.take) return picked
    }
    cursor = page.nextCursor
  } while (cursor !== undefined)
  return picked
}
