import { type RateLimit, RuntimeInputError, parseRateLimit } from '@locus/runtime'
import { type Command, Option } from 'commander'
import { CliError } from './cli-error.js'
import { HOST_KINDS, PROVIDER_NAMES } from './create-host.js'
import { parseDuration } from './parse-duration.js'

/**
 * Reads `--turn-timeout` / `--turn-idle`: a duration such as `30s` or `2m`,
 * or `off` for no bound at all (the host option's `null`; kept as `'off'`
 * here, since commander takes a parser's `null` for a flag given bare).
 *
 * @throws {CliError} `CLI_USAGE` naming the flag (as `parseDuration`, which refuses 0).
 */
export function parseTurnBound(text: string, flag: string): number | 'off' {
  if (text.trim() === 'off') return 'off'
  return parseDuration(text, flag)
}

/**
 * Reads one `--rate-limit` (repeatable) onto those given before it:
 * `provider=openai,model=gpt-4o-mini,rpm=60,tpm=200000`.
 *
 * @throws {CliError} `CLI_USAGE` naming the text and the form it should have.
 */
export function collectRateLimit(text: string, previous: readonly RateLimit[] | undefined): RateLimit[] {
  try {
    return [...(previous ?? []), parseRateLimit(text)]
  } catch (error) {
    if (RuntimeInputError.isInstance(error)) throw new CliError('CLI_USAGE', `--rate-limit: ${error.message}`, { cause: error })
    throw error
  }
}

/**
 * Adds the model host flags every command that runs workflows shares (`run`,
 * `resume`, `serve`, `worker`, `mcp`), so each spells them alike:
 * `--model-host <kind>`, with `--host <kind>` kept as its old spelling where
 * `--host` means nothing else (on `serve` it is the bind address: pass
 * `hostAlias: false` there); `--provider <name>`, the same as `--model-host`
 * for a model provider; the scripted host's `--fixtures`; the model's
 * `--base-url`, `--model`, `--api-key`; and its turn budget and streaming,
 * `--turn-timeout`, `--turn-idle` and `--no-stream`; and its shared rate
 * limits, `--rate-limit` (shared by every worker on one database under
 * `locus worker`).
 */
export function addHostFlags(command: Command, { hostAlias = true }: { readonly hostAlias?: boolean } = {}): Command {
  command.addOption(new Option('--model-host <kind>', 'where agent() calls run').choices(HOST_KINDS))
  if (hostAlias) command.addOption(new Option('--host <kind>', 'the same as --model-host (its older name)').choices(HOST_KINDS))
  command.addOption(new Option('--provider <name>', 'the model provider: the same as --model-host for a model (docs/models.md#providers-from-the-command-line)').choices(PROVIDER_NAMES))
  return command
    .option('--fixtures <file>', 'scripted host answers (default: <workflow>.fixtures.json beside the workflow)')
    .option('--base-url <url>', "the model server's base URL, such as http://localhost:11434/v1 (or $LOCUS_MODEL_BASE_URL for an OpenAI-style server)")
    .option('--model <id>', 'default model id (or $LOCUS_MODEL)')
    .option('--api-key <key>', "the provider's API key (or $LOCUS_API_KEY, $OPENAI_API_KEY, $ANTHROPIC_API_KEY, $GOOGLE_GENERATIVE_AI_API_KEY)")
    .option('--turn-timeout <duration>', "a model host's bound on one whole turn, such as 10m, or off (docs/models.md#turn-budgets)", (value: string) => parseTurnBound(value, '--turn-timeout'))
    .option('--turn-idle <duration>', 'how long a model request may go without a byte from the server, such as 2m, or off', (value: string) => parseTurnBound(value, '--turn-idle'))
    .option('--no-stream', 'ask the model for whole completions instead of streams, for servers whose streams are broken')
    .option(
      '--rate-limit <limit>',
      'a limit on the model\'s requests, such as provider=openai,model=gpt-4o-mini,rpm=60,tpm=200000 (repeatable; under locus worker shared by every worker on the database)',
      collectRateLimit,
    )
}
