// Regenerates protocol.schema.json from the zod schemas: `pnpm --filter @locus/protocol run schema`.
import { writeFileSync } from 'node:fs'
import { protocolJsonSchema } from '../src/index.js'

writeFileSync(new URL('../protocol.schema.json', import.meta.url), JSON.stringify(protocolJsonSchema(), null, 2) + '\n')
