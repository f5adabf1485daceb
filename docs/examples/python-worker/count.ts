// A workflow whose word_count tool lives in tools.py beside it:
//   npm run locus -- run docs/examples/python-worker/count.ts --input '{"text":"one two three"}' --worker "python3 docs/examples/python-worker/tools.py"
import { defineRemoteTool, defineWorkflow } from '@locus/runtime'
import { z } from 'zod'

export default defineWorkflow({
  name: 'count-words',
  input: z.object({ text: z.string() }),
  tools: { word_count: defineRemoteTool({ input: z.object({ text: z.string() }), output: z.object({ words: z.number() }) }) },
  run: async ({ input, tool }) => ({ ok: true, counted: await tool('word_count', { text: input.text }) }),
})
