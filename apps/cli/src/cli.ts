#!/usr/bin/env node
import { cancelLiveRuns } from './live-runs.js'
import { registerModuleFallback } from './module-fallback.js'
import { runCli } from './run-cli.js'

// A reader that stops early (`locus journal <id> | head`) is not an error. A
// live run still ends with its run_end: it is cancelled like a first Ctrl-C,
// nothing more reaches stdout, and the process exits once the run has ended.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') {
    if (cancelLiveRuns('the reader of stdout went away (EPIPE)') > 0) return
    process.exit(process.exitCode ?? 0)
  }
  throw error
})
registerModuleFallback()
process.exitCode = await runCli(process.argv.slice(2))
