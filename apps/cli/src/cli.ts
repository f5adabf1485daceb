#!/usr/bin/env node
import { registerModuleFallback } from './module-fallback.js'
import { runCli } from './run-cli.js'

// A reader that stops early (`locus journal <id> | head`) is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0)
  throw error
})
registerModuleFallback()
process.exitCode = await runCli(process.argv.slice(2))
