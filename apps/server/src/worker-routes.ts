import { ProtocolError, parseWorkerResponse } from '@locus/protocol'
import { ApiError } from './errors.js'
import type { RouteContext } from './route-context.js'
import { WorkerActionsQuerySchema, WorkerTriggersQuerySchema } from './schemas.js'

const DEFAULT_MAX_WAIT_SECONDS = 60

/**
 * Workers over HTTP: `GET /v1/worker/triggers` long-polls the triggers of
 * the tools a worker serves (claiming them for it), `POST /v1/worker/actions`
 * answers them. Both need the `worker` scope, and a trigger queue
 * (`workers` of the server options) that the runtime also has as its
 * `worker`; without one they answer 404 saying how to set it up.
 */
export function mountWorkerRoutes(routes: RouteContext): void {
  const { app, guard, parse, readJson, state } = routes
  const maxWaitSeconds = routes.options.maxWorkerWaitSeconds ?? DEFAULT_MAX_WAIT_SECONDS

  function queue() {
    const workers = routes.options.workers
    if (workers === undefined) {
      throw new ApiError(
        'not_found',
        'This server takes no HTTP workers: create a trigger queue (createTriggerQueue from @locus/protocol), pass it as the runtime\'s worker (createRuntime({ defaults: { worker: queue } })) and as startServer({ workers: queue }).',
      )
    }
    return workers
  }

  app.get('/v1/worker/triggers', guard('worker'), async (c) => {
    const workers = queue()
    routes.refuseWhenShuttingDown()
    const query = parse(WorkerTriggersQuerySchema, c.req.query(), 'query')
    const waitMs = Math.min(query.wait ?? 0, maxWaitSeconds) * 1000
    const signal = AbortSignal.any([c.req.raw.signal, state.shutdown.signal])
    const triggers = await workers.poll({ worker: query.worker, tools: query.tools, waitMs, ...(query.max === undefined ? {} : { max: query.max }), signal })
    return c.json({ triggers, claimTimeoutMs: workers.claimTimeoutMs }, 200)
  })

  app.post('/v1/worker/actions', guard('worker'), async (c) => {
    const workers = queue()
    const query = parse(WorkerActionsQuerySchema, c.req.query(), 'query')
    let actions
    try {
      actions = parseWorkerResponse(await readJson(c, true)).actions
    } catch (error) {
      if (!ProtocolError.isInstance(error)) throw error
      throw new ApiError('invalid_request', error.message, { issues: error.issues.map((issue) => `body.${issue.path}: ${issue.message}`), cause: error })
    }
    return c.json(workers.answer(query.worker, actions), 200)
  })
}
