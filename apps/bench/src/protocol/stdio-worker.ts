// The worker child of protocol.bench.ts: a createWorker worker served over
// newline-delimited JSON on stdin and stdout (serveNdjson), whose one tool
// answers at once, so a round trip measures the protocol and not the tool.
import { createWorker, serveNdjson } from '@locus/protocol'

const worker = createWorker({ tools: { echo: (args) => ({ echoed: args }) } })
await serveNdjson(worker, process.stdin, process.stdout)
