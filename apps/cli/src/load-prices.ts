import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { CostError, type PriceTable, loadPriceTable } from '@locus/cost'
import { CliError } from './cli-error.js'

/**
 * The price table a run is priced with: the catalogue that ships with
 * `@locus/cost`, under the prices of `--prices <file>` when given (your own
 * models, or prices you negotiated). A file that cannot be read, is not JSON
 * or names a bad price stops the command before anything is written.
 */
export async function loadPrices(file: string | undefined, cwd: string): Promise<PriceTable> {
  if (file === undefined) return loadPriceTable()
  const path = resolve(cwd, file)
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new CliError('CLI_INPUT_INVALID', `--prices ${file} cannot be read: ${(error as Error).message}. Pass a JSON file such as {"models":{"my-model":{"input":"3","output":"15"}}} (dollars per million tokens).`)
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new CliError('CLI_INPUT_INVALID', `--prices ${file} is not JSON: ${(error as Error).message}.`)
  }
  try {
    return await loadPriceTable({ prices: json, pricesSource: file })
  } catch (error) {
    if (CostError.isInstance(error)) throw new CliError('CLI_INPUT_INVALID', `--prices ${error.message}`, { cause: error })
    throw error
  }
}
