// The floor of protocol.bench.ts's stdio round trip: a child that writes each
// line it reads on stdin back to stdout as it is, with no parsing, no
// validation and no worker; what is left is the pipes, line splitting and the
// two event loops.
import { createInterface } from 'node:readline'

const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY })
lines.on('line', (line) => {
  process.stdout.write(line + '\n')
})
