// Cost of the boundary every returned value crosses: detach + classify, next
// to the JSON round trip it mirrors, measured in the same run.
import { measure, printTable } from '@locus/bench-kit'
import { classifyOutcome, prepareWorkflowResult } from '@locus/outcome'

const smoke = process.env.LOCUS_BENCH_SMOKE === '1'
const count = smoke ? 200 : 20_000
const values = Array.from({ length: count }, (_, index) => ({
  ok: index % 10 !== 0,
  id: `item-${index}`,
  score: index / 7,
  tags: ['a', 'b', 'c'],
  nested: { at: new Date(index * 1000), items: [{ n: index }, { n: index + 1 }] },
}))

let sink = 0
const results = await measure(
  [
    {
      name: 'JSON.parse(JSON.stringify(v))',
      operations: count,
      run: () => {
        for (const value of values) sink += JSON.parse(JSON.stringify(value)) === null ? 1 : 0
      },
    },
    {
      name: 'prepareWorkflowResult(v)',
      operations: count,
      run: () => {
        for (const value of values) sink += prepareWorkflowResult(value) === null ? 1 : 0
      },
    },
    {
      name: 'prepare + classifyOutcome',
      operations: count,
      run: () => {
        for (const value of values) sink += classifyOutcome(prepareWorkflowResult(value)).failed ? 1 : 0
      },
    },
  ],
  { rounds: smoke ? 1 : 7, warmupRounds: smoke ? 0 : 2 },
)
printTable(`@locus/outcome: detach and classify a small record (${count} values)`, results, 'JSON.parse(JSON.stringify(v))')
if (sink < 0) console.log(sink)
