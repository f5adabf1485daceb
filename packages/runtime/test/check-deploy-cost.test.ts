// check-deploy in dollars (issue #32, surfaces): what the calls that would run again on resume
// cost when they were recorded, every agent call and every child run's calls included.
import { createPriceTable, parsePriceFile } from '@locus/cost'
import { checkDeploy, createScriptedHost, defineWorkflow, runWorkflowScript } from '@locus/runtime'
import { describe, expect, it } from 'vitest'
import { tempRunsDir } from './helpers.js'

// $2.50 per million prompt tokens and $10 per million written; `mystery-model` has no price.
const prices = createPriceTable({ prices: parsePriceFile({ models: { scripted: { input: '2.5', output: '10' } } }) })

const summarise = defineWorkflow({ name: 'summarise', run: async ({ agent }) => ({ ok: true, summary: (await agent('Summarise the ticket')).answer }) })

function triage(first: string) {
  return defineWorkflow({
    name: 'triage',
    agents: { guesser: { model: 'mystery-model' } },
    run: async ({ agent, spawn }) => {
      await agent(`${first} the ticket`)
      await agent('Plan the work')
      await agent('Guess the owner', { agent: 'guesser' })
      await spawn(summarise, {})
      return { ok: true }
    },
  })
}

const host = () =>
  createScriptedHost({
    rules: [
      { match: { prompt: 'Plan' }, steps: [{ text: 'planned', usage: { inputTokens: 333, outputTokens: 77 } }] },
      { match: { prompt: 'Guess' }, steps: [{ text: 'ana', usage: { inputTokens: 7, outputTokens: 3 } }] },
      { match: { prompt: 'Summarise' }, steps: [{ text: 'summary', usage: { inputTokens: 5000, outputTokens: 1 } }] },
      { steps: [{ text: 'outlined', usage: { inputTokens: 1200, outputTokens: 300 } }] },
    ],
  })

describe('checkDeploy prices what would run again', () => {
  it('in dollars: every recorded agent call after the divergence and the child run’s calls, the unpriced requests counted apart', async () => {
    const runsDir = tempRunsDir()
    const run = await runWorkflowScript(triage('Outline'), { host: host(), runsDir, prices })
    expect(run.disposition).toBe('completed')
    const report = await checkDeploy({ runsDir, workflows: [triage('Sketch'), summarise], all: true })
    // Outline: 1,200 × $2.50 + 300 × $10 per million = $0.006; Plan: 333 × $2.50 + 77 × $10 = $0.0016025;
    // the child's Summarise: 5,000 × $2.50 + 1 × $10 = $0.01251. Guess went to a model with no price.
    expect(report.runs[0]).toMatchObject({
      verdict: 'diverged',
      divergence: { ordinal: '1', fields: ['prompt'] },
      liveAgain: { agent: 3, child: 1, inputTokens: 1200 + 333 + 7 + 5000, outputTokens: 300 + 77 + 3 + 1, usd: '0.0201125', unpricedRequests: 1 },
    })

    // A divergence at the child prices only the child: the calls before it are served from the journal.
    const later = defineWorkflow({
      name: 'triage',
      agents: { guesser: { model: 'mystery-model' } },
      run: async ({ agent, spawn }) => {
        await agent('Outline the ticket')
        await agent('Plan the work')
        await agent('Guess the owner', { agent: 'guesser' })
        await spawn(defineWorkflow({ name: 'summarise', run: async ({ agent: ask }) => ({ ok: true, summary: (await ask('Summarise it briefly')).answer }) }), { brief: true })
        return { ok: true }
      },
    })
    const atChild = await checkDeploy({ runsDir, workflows: [later], all: true })
    expect(atChild.runs[0]?.liveAgain).toMatchObject({ agent: 0, child: 1, usd: '0.012510', unpricedRequests: 0 })
  })

  it('says null dollars for a run that was not priced, and for one that replays identically', async () => {
    const runsDir = tempRunsDir()
    await runWorkflowScript(triage('Outline'), { host: host(), runsDir })
    const unpriced = await checkDeploy({ runsDir, workflows: [triage('Sketch')], all: true })
    expect(unpriced.runs[0]?.liveAgain).toMatchObject({ agent: 3, usd: null, unpricedRequests: 0 })
    const same = await checkDeploy({ runsDir, workflows: [triage('Outline')], all: true })
    expect(same.runs[0]).toMatchObject({ verdict: 'identical', liveAgain: { usd: null, unpricedRequests: 0 } })
  })
})
