import type { ScheduleState, SlotRecord, StoredSchedule } from '@locus/store'
import cronstrue from 'cronstrue'
import { type SafeHtml, html } from './html.js'

/** A schedule's timing in words: `cronstrue`'s reading of its cron expression (with its time zone), or its period. */
export function scheduleWords(schedule: StoredSchedule): string {
  if (schedule.cron !== undefined) {
    let words: string
    try {
      words = cronstrue.toString(schedule.cron, { use24HourTimeFormat: true })
    } catch {
      // The expression was checked by croner when the schedule was defined; a reading cronstrue lacks still shows the text.
      words = schedule.cron
    }
    return `${words} (${schedule.timezone ?? 'UTC'})`
  }
  return `every ${schedule.every ?? '?'}`
}

const enc = encodeURIComponent

/** `/schedules`: each schedule, its timing in words and its latest slot. */
export function renderSchedulesBody(rows: readonly { readonly state: ScheduleState; readonly last: SlotRecord | undefined }[]): SafeHtml {
  if (rows.length === 0) {
    return html`<h1>Schedules</h1><p>No schedules in this store yet. <code>locus serve --workflows</code> or <code>locus worker --workflows</code> registers those a module exports.</p>`
  }
  return html`<h1>Schedules</h1>
<div class="scroll"><table class="runs" data-testid="schedules"><thead><tr><th scope="col">Schedule</th><th scope="col">Workflow</th><th scope="col">When</th><th scope="col">Overlap</th><th scope="col">State</th><th scope="col">Latest slot</th><th scope="col">Outcome</th></tr></thead><tbody>${rows.map(
    ({ state, last }) =>
      html`<tr><th scope="row"><a href="/schedules/${enc(state.schedule.id)}">${state.schedule.id}</a></th><td>${state.schedule.workflow}</td><td title="${state.schedule.cron ?? state.schedule.every ?? ''}">${scheduleWords(state.schedule)}</td><td>${state.schedule.overlap}</td><td>${state.paused ? 'paused' : 'active'}</td><td>${last?.slot ?? '-'}</td><td>${last?.outcome ?? '-'}</td></tr>`,
  )}</tbody></table></div>`
}

/** `/schedules/{id}`: the schedule and its slot records, newest first, each started slot linking to its run. */
export function renderScheduleBody(state: ScheduleState, slots: readonly SlotRecord[]): SafeHtml {
  const { schedule } = state
  return html`<h1>Schedule ${schedule.id}</h1>
<dl class="facts" data-testid="schedule-facts"><dt>Workflow</dt><dd>${schedule.workflow}</dd><dt>When</dt><dd data-testid="schedule-when">${scheduleWords(schedule)}</dd><dt>Expression</dt><dd><code>${schedule.cron ?? `every ${schedule.every ?? '?'}`}</code></dd><dt>Overlap</dt><dd>${schedule.overlap}</dd><dt>Catch-up window</dt><dd>${schedule.catchUpWindow}</dd><dt>State</dt><dd>${state.paused ? 'paused' : 'active'}</dd><dt>Registered</dt><dd>${state.registeredAt}</dd></dl>
<h2>Slots</h2>
${
  slots.length === 0
    ? html`<p>No slot has come yet.</p>`
    : html`<div class="scroll"><table class="runs" data-testid="slots"><thead><tr><th scope="col">Slot</th><th scope="col">Outcome</th><th scope="col">Run</th><th scope="col">Why</th></tr></thead><tbody>${slots.map(
        (record) =>
          html`<tr data-outcome="${record.outcome}"><th scope="row">${record.slot}</th><td>${record.source === undefined || record.source === 'schedule' ? record.outcome : `${record.outcome} (${record.source})`}</td><td>${record.runId === undefined ? '-' : html`<a href="/runs/${enc(record.runId)}">${record.runId}</a>`}</td><td>${record.error ?? ''}</td></tr>`,
      )}</tbody></table></div>`
}`
}
