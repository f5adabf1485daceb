import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { jsonDepthProblem } from '@locus/outcome'
import { CliError } from './cli-error.js'

/** Where a run's input comes from: inline JSON, a JSON file, or neither. */
export interface InputFlags {
  readonly input?: string | undefined
  readonly inputFile?: string | undefined
}

function parseJson(text: string, source: string): unknown {
  let value: unknown
  try {
    value = JSON.parse(text) as unknown
  } catch (error) {
    throw new CliError('CLI_USAGE', `${source} is not valid JSON (${(error as Error).message}). Quote it for the shell, e.g. --input '{"ticket":"T-1"}'.`, { cause: error })
  }
  const tooDeep = jsonDepthProblem(value, source)
  if (tooDeep !== undefined) throw new CliError('CLI_INPUT_INVALID', `${tooDeep}.`)
  return value
}

/**
 * The workflow input from `--input '<json>'` or `--input-file <path>`;
 * `undefined` when neither is given (the workflow's schema decides whether
 * that is allowed).
 *
 * @throws {CliError} `CLI_USAGE` when both flags are given, the file cannot be read, or the text is not JSON;
 *   `CLI_INPUT_INVALID` when it nests deeper than `MAX_JSON_DEPTH` (checked before any run is created).
 */
export function readWorkflowInput(flags: InputFlags, cwd: string): unknown {
  if (flags.input !== undefined && flags.inputFile !== undefined) {
    throw new CliError('CLI_USAGE', 'Give the input once: either --input or --input-file, not both.')
  }
  if (flags.input !== undefined) return parseJson(flags.input, '--input')
  if (flags.inputFile === undefined) return undefined
  let text: string
  try {
    text = readFileSync(resolve(cwd, flags.inputFile), 'utf8')
  } catch (error) {
    throw new CliError('CLI_USAGE', `Cannot read --input-file ${flags.inputFile}: ${(error as Error).message}.`, { cause: error })
  }
  return parseJson(text, `--input-file ${flags.inputFile}`)
}
