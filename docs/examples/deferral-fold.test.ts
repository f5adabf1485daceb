// Which deferrals are open, when each one's deadline is, whether it expired
// and how it settled is folded in one place: RunView in @locus/journal
// (openDeferrals, deferralSettlements, deferrals). Resume, the deploy check,
// the runtime's answers, describe and the inspector read that fold. This scans
// every package's and app's source so a second deferral fold cannot come back.
// Code that only reacts to one line (a formatter, a notification, a span) is
// named below with why it is not a fold.
import { readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { projectSourceFiles, repoRoot } from './source-tree.js'

const root = repoRoot
const files = projectSourceFiles()

/** The fold itself. */
const OWNER = 'packages/journal/src/run-view.ts'

/** Files that branch on a deferral line without keeping deferral state, and why. */
const ONE_LINE_AT_A_TIME: Readonly<Record<string, string>> = {
  'apps/cli/src/format-journal-line.ts': 'prints one line as text',
  'apps/cli/src/progress/progress-reporter.ts': 'redraws the progress tree when a wait begins',
  'packages/mcp/src/locus-mcp-server.ts': 'turns one line into one MCP progress notification',
  'packages/otel/src/journal-tracer.ts': 'opens and ends an OpenTelemetry span per deferral',
  // The store keeps a serializable summary row per run, updated line by line as it is written (no view object exists there).
  'packages/store/src/run-rows.ts': 'the summary row’s waitingOn list: open waits of deferrals and timers alike, for list and status',
  'apps/bench/src/protocol/deferrals-heap-worker.ts': 'a benchmark counting the deferrals it opened',
  'packages/runtime/bench/check-deploy.bench.ts': 'a benchmark cancelling each recorded run once its approval opens',
}

/** A branch on a deferral line's type: the first thing any fold of deferrals does. */
const DEFERRAL_BRANCH = /(?:===\s*|case\s+)'deferred_(?:open|settled|expired)'/

describe('deferrals are folded in one place', () => {
  it('scans a real tree, the fold itself included', () => {
    expect(files.length).toBeGreaterThan(100)
    const owner = files.find((file) => relative(root, file) === OWNER)
    expect(owner).toBeDefined()
    expect(readFileSync(owner ?? '', 'utf8')).toMatch(DEFERRAL_BRANCH)
  })

  it('no other source branches on deferral lines, except the named one-line readers', () => {
    const branching = files.map((file) => relative(root, file)).filter((file) => file !== OWNER && DEFERRAL_BRANCH.test(readFileSync(join(root, file), 'utf8')))
    expect(branching.filter((file) => ONE_LINE_AT_A_TIME[file] === undefined)).toEqual([])
  })

  it('every exception still exists and still reads deferral lines (a stale entry would hide a new fold)', () => {
    for (const file of Object.keys(ONE_LINE_AT_A_TIME)) expect(DEFERRAL_BRANCH.test(readFileSync(join(root, file), 'utf8')), file).toBe(true)
  })
})
