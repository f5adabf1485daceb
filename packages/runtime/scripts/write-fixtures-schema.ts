// Regenerates fixtures.schema.json from the zod schema: `pnpm --filter @locus/runtime run schema`.
import { writeFileSync } from 'node:fs'
import { scriptedFixturesJsonSchema } from '../src/index.js'

writeFileSync(new URL('../fixtures.schema.json', import.meta.url), JSON.stringify(scriptedFixturesJsonSchema(), null, 2) + '\n')
