import { type WorkflowDefinition, checkDeploy, durationMs } from '@locus/runtime'
import { ApiError } from './errors.js'
import type { RouteContext } from './route-context.js'
import { DeployCheckBodySchema } from './schemas.js'

/**
 * `POST /v1/deploy-check`: `checkDeploy` of @locus/runtime over the server's
 * store, against the workflow code this server registered. Run it on a server
 * of the build about to ship, pointed at production's store (`locus serve
 * --workflows <new code> --database-url <production>`), before it takes
 * traffic: it reads the runs and writes nothing to them. Answers 200 with
 * the report whether or not it is `ok`; needs the `runs:read` scope.
 */
export function mountDeployCheck(routes: RouteContext): void {
  const { app, guard, parse, readJson, runtime } = routes

  app.post('/v1/deploy-check', guard('runs:read'), async (c) => {
    routes.refuseWhenShuttingDown()
    const body = parse(DeployCheckBodySchema, await readJson(c, false), 'body')
    const names = body.workflows ?? [...runtime.workflows.keys()]
    const unknown = names.filter((name) => !runtime.workflows.has(name))
    if (unknown.length > 0) {
      throw new ApiError('invalid_request', `This server registered no workflow named ${unknown.map((name) => JSON.stringify(name)).join(', ')}; GET /v1/workflows lists the ones it has.`, {
        issues: unknown.map((name) => `body.workflows: no workflow "${name}"`),
      })
    }
    const workflows = names.map((name) => runtime.workflows.get(name) as WorkflowDefinition)
    const since = body.since === undefined ? undefined : durationMs(body.since)
    const report = await checkDeploy({
      store: runtime.store,
      workflows,
      ...(since === undefined ? {} : { since: Date.now() - since }),
      ...(body.all === undefined ? {} : { all: body.all }),
      ...(body.concurrency === undefined ? {} : { concurrency: body.concurrency }),
    })
    return c.json(report, 200)
  })
}
