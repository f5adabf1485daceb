import { MAX_BACKFILL_SLOTS, backfillSlots } from '@locus/runtime'
import type { ScheduleState, ScheduleStore } from '@locus/store'
import { ApiError } from './errors.js'
import type { RouteContext } from './route-context.js'
import { BackfillBodySchema } from './schemas.js'

/**
 * Schedules over HTTP: `GET /v1/schedules` and `/v1/schedules/{id}` read them
 * (`runs:read`); `POST /v1/schedules/{id}/pause`, `/unpause`, `/trigger` and
 * `/backfill` operate them (`runs:start`: each decides which runs start). The
 * operations write to the store only, as `locus schedule` does: the process
 * that holds the schedule fires the slots asked for on its next tick.
 */
export function mountScheduleRoutes(routes: RouteContext): void {
  const { app, guard, parse, readJson } = routes
  const now = routes.options.now ?? Date.now

  function store(): ScheduleStore {
    const schedules = routes.options.schedules
    if (schedules === undefined) throw new ApiError('not_found', 'This server keeps no schedules: its store has none.')
    return schedules
  }
  async function requireSchedule(schedules: ScheduleStore, id: string): Promise<ScheduleState> {
    const state = await schedules.readSchedule(id).catch(() => undefined)
    if (state === undefined) throw new ApiError('not_found', `No schedule "${id}"; GET /v1/schedules lists them.`)
    return state
  }

  app.get('/v1/schedules', guard('runs:read'), async (c) => {
    const schedules = store()
    const items = []
    for (const state of await schedules.listSchedules()) items.push({ ...state, lastSlot: (await schedules.listSlots(state.schedule.id, { limit: 1 }))[0] ?? null })
    return c.json({ schedules: items })
  })

  app.get('/v1/schedules/:id', guard('runs:read'), async (c) => {
    const schedules = store()
    const id = c.req.param('id') ?? ''
    const state = await requireSchedule(schedules, id)
    return c.json({ ...state, slots: await schedules.listSlots(id, { limit: 100 }) })
  })

  for (const paused of [true, false]) {
    app.post(`/v1/schedules/:id/${paused ? 'pause' : 'unpause'}`, guard('runs:start'), async (c) => {
      const schedules = store()
      const id = c.req.param('id') ?? ''
      await requireSchedule(schedules, id)
      return c.json(await schedules.setPaused(id, paused), 200)
    })
  }

  app.post('/v1/schedules/:id/trigger', guard('runs:start'), async (c) => {
    const schedules = store()
    const id = c.req.param('id') ?? ''
    await requireSchedule(schedules, id)
    const slot = new Date(now()).toISOString()
    await schedules.requestSlots(id, [{ slot, source: 'trigger' }])
    return c.json({ scheduleId: id, requested: [slot] }, 202)
  })

  app.post('/v1/schedules/:id/backfill', guard('runs:start'), async (c) => {
    const schedules = store()
    const id = c.req.param('id') ?? ''
    const body = parse(BackfillBodySchema, await readJson(c, true), 'body')
    const from = Date.parse(body.from)
    const to = Date.parse(body.to)
    if (to < from) throw new ApiError('invalid_request', `body.to (${body.to}) is before body.from (${body.from}).`, { issues: ['body.to: before body.from'] })
    const state = await requireSchedule(schedules, id)
    const { slots, more } = backfillSlots(state.schedule, from, to)
    if (more) {
      throw new ApiError('invalid_request', `From ${body.from} to ${body.to} holds more than ${MAX_BACKFILL_SLOTS} slots of schedule "${id}"; backfill a shorter range at a time.`, {
        issues: [`body: more than ${MAX_BACKFILL_SLOTS} slots`],
      })
    }
    await schedules.requestSlots(
      id,
      slots.map((slot) => ({ slot, source: 'backfill' as const })),
    )
    return c.json({ scheduleId: id, requested: slots }, 202)
  })
}
