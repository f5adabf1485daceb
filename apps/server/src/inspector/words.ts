import type { AnswerOutcome, RunDisposition } from '@locus/outcome'
import { type SafeHtml, html } from './html.js'

/** How a status looks: `ok` only for a plain success, never for failed or partial; the glyph and words carry it without colour. */
export type Tone = 'ok' | 'bad' | 'warn' | 'muted' | 'live'

const GLYPH: Readonly<Record<Tone, string>> = { ok: '✓', bad: '✗', warn: '◐', muted: '○', live: '●' }

/** A status badge: a glyph and words, with a tone class; colour is never the only signal. */
export function badge(tone: Tone, words: string, extra = ''): SafeHtml {
  return html`<span class="badge tone-${tone}${extra === '' ? '' : ` ${extra}`}"><span aria-hidden="true">${GLYPH[tone]}</span> ${words}</span>`
}

/** @param sleepingUntil - while the run sleeps on a `sleep()` timer, the earliest due time (ISO 8601) */
export function dispositionWords(disposition: RunDisposition | undefined, status: string, sleepingUntil?: string): { tone: Tone; words: string } {
  if (disposition === 'completed') return { tone: 'ok', words: 'Completed' }
  if (disposition === 'failed') return { tone: 'bad', words: 'Failed' }
  if (disposition === 'cancelled') return { tone: 'bad', words: 'Cancelled' }
  if (status === 'waiting' && sleepingUntil !== undefined) return { tone: 'live', words: `Sleeping until ${sleepingUntil}` }
  if (status === 'waiting') return { tone: 'live', words: 'Waiting on a deferred tool' }
  if (status === 'cancelling') return { tone: 'live', words: 'Cancelling' }
  if (status === 'queued') return { tone: 'muted', words: 'Queued' }
  if (status === 'suspended') return { tone: 'muted', words: 'Suspended (a resume continues it)' }
  if (status === 'taken-over') return { tone: 'muted', words: 'Taken over by another worker' }
  if (status === 'unfinished') return { tone: 'bad', words: 'Unfinished (stopped without run_end)' }
  return { tone: 'live', words: 'Running' }
}

export function answerWords(outcome: AnswerOutcome | undefined): { tone: Tone; words: string } {
  switch (outcome) {
    case 'complete':
      return { tone: 'ok', words: 'Complete answer' }
    case 'partial':
      return { tone: 'warn', words: 'Partial answer' }
    case 'cannot_answer':
      return { tone: 'bad', words: 'Could not answer' }
    case 'failed':
      return { tone: 'bad', words: 'No answer (failed)' }
    default:
      return { tone: 'muted', words: 'No answer yet' }
  }
}

/** Milliseconds as a person reads them. */
export function duration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '—'
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`
  const minutes = Math.floor(ms / 60_000)
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`
}

/** An ISO time as `2026-12-03 10:28:51 UTC`, in a `<time>` element. */
export function when(iso: string | undefined): SafeHtml {
  if (iso === undefined) return html`—`
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC')}</time>`
}
