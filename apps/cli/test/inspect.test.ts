import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { examplesDir, jsonLines, runLocus, settle, startLocus, tempDir } from './helpers.js'

let runsDir: string

beforeAll(async () => {
  runsDir = await tempDir()
  await runLocus(['run', join(examplesDir, 'research/research-fan-out.ts'), '--runs-dir', runsDir, '--run-id', 'research', '--quiet'])
  await runLocus(['run', join(examplesDir, 'triage/triage-pipeline.ts'), '--runs-dir', runsDir, '--run-id', 'triage', '--quiet'])
})

describe('inspecting runs', () => {
  it('`locus show` gives the summary, the retried calls attempt by attempt, and the result', async () => {
    const result = await runLocus(['show', 'triage', '--runs-dir', runsDir])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^completed {2}triage-pipeline {2}run triage/m)
    expect(result.stdout).toMatch(/Retried calls:\n {2}agent triager .*\n {4}attempt 1 \S+: threw \(host-turn-timeout\)\n {4}attempt 2 \S+: completed/)
    expect(result.stdout).toMatch(/tool fetch_ticket .*\n {4}attempt 1: failed \(provider_error\)\n {4}attempt 2: completed/)
  })

  it('`locus show` of a partial answer lists its gaps and caveats', async () => {
    const result = await runLocus(['show', 'research', '--runs-dir', runsDir])
    expect(result.stdout).toMatch(/Gaps:\n {2}- payment_history \(enriching\): finance system did not respond in time/)
    expect(result.stdout).toMatch(/Caveats:\n {2}- Could not check the payment history/)
  })

  it('`locus ls` lists recent runs as a table, newest first', async () => {
    const result = await runLocus(['ls', '--runs-dir', runsDir])
    const rows = result.stdout.trim().split('\n')
    expect(rows[0]).toMatch(/^RUN +WORKFLOW +STATE +ANSWER +STARTED +TOOK +CALLS +RETRIES +GAPS +COST$/)
    expect(rows.slice(1).map((row) => row.split(/\s+/)[0])).toEqual(['triage', 'research'])
    expect(rows[2]).toMatch(/research +research-fan-out +failed +partial/)
    const limited = await runLocus(['ls', '--runs-dir', runsDir, '--limit', '1', '--json'])
    expect(jsonLines(limited.stdout).map((line) => line.runId)).toEqual(['triage'])
  })

  it('`locus journal` prints readable lines and filters them with --type', async () => {
    const all = await runLocus(['journal', 'triage', '--runs-dir', runsDir])
    expect(all.stdout).toMatch(/run triage-pipeline started/)
    const retries = await runLocus(['journal', 'triage', '--runs-dir', runsDir, '--type', 'retry'])
    const lines = retries.stdout.trim().split('\n')
    expect(lines).toHaveLength(2)
    for (const line of lines) expect(line).toContain('[workflow:retry]')
    const raw = await runLocus(['journal', 'triage', '--runs-dir', runsDir, '--type', 'run_end', '--json'])
    expect(jsonLines(raw.stdout)).toMatchObject([{ type: 'run_end', disposition: 'completed' }])
  })

  it('`locus journal --follow` prints lines while the run is live and stops at its end', async () => {
    const live = startLocus(['run', join(examplesDir, 'long-fan-out/long-fan-out.ts'), '--runs-dir', runsDir, '--run-id', 'live', '--quiet'])
    const running = settle(live)
    const journalPath = join(runsDir, 'live', 'journal.jsonl')
    // Wait for the run to exist without sleeping on a fixed guess: poll its journal.
    await expect.poll(() => existsSync(journalPath), { timeout: 20_000, interval: 50 }).toBe(true)
    const followed = await runLocus(['journal', 'live', '--runs-dir', runsDir, '--follow', '--type', 'agent_end,run_end'])
    expect(followed.code).toBe(0)
    const lines = followed.stdout.trim().split('\n')
    expect(lines.filter((line) => line.includes('agent summariser'))).toHaveLength(12)
    expect(lines.at(-1)).toMatch(/run ended completed/)
    expect((await running).code).toBe(0)
  })

  it('`locus report` prints the outcome table and the gaps per tool', async () => {
    const result = await runLocus(['report', '--runs-dir', runsDir, '--since', '1h'])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/complete +[12] /)
    expect(result.stdout).toMatch(/partial +1 /)
    expect(result.stdout).toMatch(/payment_history +1 +0 /)
    const json = JSON.parse((await runLocus(['report', '--runs-dir', runsDir, '--json'])).stdout) as { outcomes: { partial: number }; gaps: { totalGaps: number } }
    expect(json.outcomes.partial).toBe(1)
    expect(json.gaps.totalGaps).toBe(1)
    expect(readFileSync(join(runsDir, 'outcomes.sqlite')).length).toBeGreaterThan(0)
  })
})

describe('`locus init`', () => {
  it('scaffolds a workflow and fixtures that run at once, and refuses to overwrite them', async () => {
    const dir = await tempDir()
    const init = await runLocus(['init', 'starter'], { cwd: dir })
    expect(init.code).toBe(0)
    // No package.json with "type": "module" here, so the file is .mts, an ES module anywhere.
    expect(init.stdout).toMatch(/Created starter\.mts and starter\.fixtures\.json/)
    const run = await runLocus(['run', 'starter.mts', '--runs-dir', 'runs', '--json'], { cwd: dir })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(jsonLines(run.stdout).at(-1)).toMatchObject({ standing: 'completed', workflow: 'starter', retries: 1 })
    const again = await runLocus(['init', 'starter'], { cwd: dir })
    expect(again.code).toBe(2)
    expect(again.stderr).toMatch(/starter\.mts already exists; choose another name, or pass --force/)
  })

  it('prints the next command as the person ran locus: the binary, or the root script of a clone', async () => {
    // The file is .ts or .mts depending on the package it lands in (under `npm test`, npm names the repository's): read it back.
    const fileOf = (stdout: string): string => /Created (starter\.m?ts) /.exec(stdout)?.[1] ?? 'no file'
    const binary = await runLocus(['init', 'starter'], { cwd: await tempDir(), env: { npm_lifecycle_event: 'test' } })
    expect(binary.stdout).toContain(`\n  locus run ${fileOf(binary.stdout)} --host scripted --fixtures starter.fixtures.json\n`)
    // `npm run locus -- init starter` (or pnpm's) announces the script it runs as the lifecycle event.
    // npm also names the directory it was typed in (INIT_CWD), where the files go.
    const typedIn = await tempDir()
    const clone = await runLocus(['init', 'starter'], { cwd: typedIn, env: { npm_lifecycle_event: 'locus', INIT_CWD: typedIn } })
    expect(existsSync(join(typedIn, 'starter.fixtures.json'))).toBe(true)
    expect(clone.stdout).toContain(`\n  npm run locus -- run ${fileOf(clone.stdout)} --host scripted --fixtures starter.fixtures.json\n`)
    expect(clone.stdout).toContain(`\n  npm run locus -- run ${fileOf(clone.stdout)} --host openai-compatible`)
  })
})
