/** The workflow file `locus init` writes, for a workflow called `name` saved as `fileName`. */
export function workflowTemplate(name: string, fileName: string, fixturesName: string): string {
  return `/**
 * ${name}: a Locus workflow to start from.
 *
 * What it shows: two agent calls fanned out with parallel() (a fail-closed
 * barrier), a tool call whose arguments are checked by its zod schema, and a
 * result that says ok: true only when everything it needs is there.
 *
 * Run it with the scripted host (answers come from ${fixturesName}):
 *   locus run ${fileName} --host scripted --fixtures ${fixturesName}
 * Point it at a real model (any OpenAI-compatible server):
 *   locus run ${fileName} --host openai-compatible --base-url http://localhost:11434/v1 --model llama3.2
 * Then look at the run: locus show <runId>, locus journal <runId>.
 */
import { defineTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

export default defineWorkflow({
  name: ${JSON.stringify(name)},
  input: z.object({ topic: z.string().min(1, 'topic must not be empty') }).default({ topic: 'the release notes' }),
  tools: {
    word_count: defineTool({
      description: 'Counts the words of a text.',
      input: z.object({ text: z.string() }),
      run: ({ text }) => ({ words: text.split(/\\s+/).filter((word) => word !== '').length }),
    }),
  },
  agents: { writer: { system: 'You write short, plain answers.' } },
  async run({ input, agent, tool, parallel }) {
    const [summary, risk] = await parallel([
      () => agent(\`Summarise \${input.topic} in two sentences.\`, { agent: 'writer', label: 'summary', attempts: 2, timeoutMs: 60_000 }),
      () => agent(\`Name the biggest risk in \${input.topic}, in one sentence.\`, { agent: 'writer', label: 'risk', attempts: 2, timeoutMs: 60_000 }),
    ])
    const counted = await tool('word_count', { text: summary.answer })
    return { ok: true, topic: input.topic, summary: summary.answer, risk: risk.answer, counted }
  },
})
`
}

/** The scripted host fixtures `locus init` writes beside the workflow. */
export function fixturesTemplate(): string {
  const fixtures = {
    rules: [
      { match: { agent: 'writer', label: 'summary' }, steps: [{ text: 'The release adds resumable runs and honest partial answers. Nothing was removed.', delayMs: 200 }] },
      { match: { agent: 'writer', label: 'risk' }, steps: [{ throw: 'host-turn-timeout', delayMs: 100 }, { text: 'Old journals need the new reader.', delayMs: 150 }] },
      { steps: [{ text: 'ok' }] },
    ],
  }
  return `${JSON.stringify(fixtures, null, 2)}\n`
}
