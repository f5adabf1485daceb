import { existsSync, readFileSync } from 'node:fs'
import { basename, dirname, extname, join, relative, resolve } from 'node:path'
import { type AgentHost, type RateLimit, RuntimeInputError, createScriptedHost, parseScriptedFixtures } from '@locus/runtime'
import { CliError } from './cli-error.js'

/** The hosts `--host` names. `none` runs without one: every agent() call then fails as `sdk-unavailable`. */
export const HOST_KINDS = ['scripted', 'openai-compatible', 'openai', 'anthropic', 'google', 'none'] as const
/** One of {@link HOST_KINDS}. */
export type HostKind = (typeof HOST_KINDS)[number]

/** The model providers `--provider` names: the model hosts of {@link HOST_KINDS}, each through the AI SDK's own provider package. */
export const PROVIDER_NAMES = ['openai', 'openai-compatible', 'anthropic', 'google'] as const
/** One of {@link PROVIDER_NAMES}. */
export type ProviderName = (typeof PROVIDER_NAMES)[number]

function isProviderName(value: string | undefined): value is ProviderName {
  return (PROVIDER_NAMES as readonly (string | undefined)[]).includes(value)
}

/** The host flags of `locus run`, `resume`, `serve`, `worker` and `mcp` (see `addHostFlags`). */
export interface HostFlags {
  /** `--model-host <kind>`: where agent() calls run. */
  readonly modelHost?: string | undefined
  /** `--host <kind>`, the older spelling of `--model-host` (not on `serve`, where it is the bind address). */
  readonly host?: string | undefined
  /** `--provider <name>`: the same as `--model-host` for a model provider (one of {@link PROVIDER_NAMES}). */
  readonly provider?: string | undefined
  /** `--turn-timeout`: a model host's bound on one whole turn, in ms; `'off'` for none. */
  readonly turnTimeout?: number | 'off' | undefined
  /** `--turn-idle`: how long a model request may go without a byte, in ms; `'off'` for none. */
  readonly turnIdle?: number | 'off' | undefined
  /** `false` with `--no-stream`: whole completions instead of streams. */
  readonly stream?: boolean | undefined
  readonly fixtures?: string | undefined
  readonly baseUrl?: string | undefined
  readonly model?: string | undefined
  readonly apiKey?: string | undefined
  /** `--rate-limit` (repeatable): limits on the model host's requests, parsed. */
  readonly rateLimit?: readonly RateLimit[] | undefined
}

/** A host ready for a run, and a line that says which it is. */
export interface ChosenHost {
  readonly kind: HostKind
  readonly host: AgentHost | undefined
  /** For the run header: `scripted (fixtures: triage.fixtures.json)`. */
  readonly description: string
}

/** The fixtures file `locus` looks for beside a workflow: `triage.ts` → `triage.fixtures.json`. */
export function siblingFixturesPath(workflowPath: string): string {
  return join(dirname(workflowPath), `${basename(workflowPath, extname(workflowPath))}.fixtures.json`)
}

function shown(path: string, cwd: string): string {
  const fromCwd = relative(cwd, path)
  return fromCwd.startsWith('..') ? path : fromCwd
}

function scriptedHost(fixturesPath: string, cwd: string): ChosenHost {
  let text: string
  try {
    text = readFileSync(fixturesPath, 'utf8')
  } catch (error) {
    throw new CliError('HOST_OPTIONS_INVALID', `Cannot read fixtures file ${shown(fixturesPath, cwd)}: ${(error as Error).message}.`, { cause: error })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new CliError('HOST_OPTIONS_INVALID', `Fixtures file ${shown(fixturesPath, cwd)} is not valid JSON: ${(error as Error).message}.`, { cause: error })
  }
  try {
    const host = createScriptedHost(parseScriptedFixtures(json, shown(fixturesPath, cwd)))
    return { kind: 'scripted', host, description: `scripted (fixtures: ${shown(fixturesPath, cwd)})` }
  } catch (error) {
    if (RuntimeInputError.isInstance(error)) throw new CliError('HOST_OPTIONS_INVALID', error.message, { cause: error })
    throw error
  }
}

/**
 * Builds the model host a run recorded in `run_start.options.hostSettings`
 * again, with the flags laid over it (a flag wins) and the key from
 * `--api-key` or `LOCUS_API_KEY`, since a key is never recorded.
 */
async function recordedModelHost(recorded: unknown, flags: HostFlags, env: CliEnv, launchMode: string | undefined): Promise<ChosenHost> {
  const { createAiSdkHost, aiSdkHostOptionsFromSettings, isAiSdkHostOptionsError, PROVIDER_KEY_VARIABLES } = await import('@locus/host-ai-sdk')
  const settings = recorded as { apiKey?: unknown; customModel?: unknown; api?: unknown }
  const kind: ProviderName = isProviderName(settings.api as string | undefined) ? (settings.api as ProviderName) : 'openai-compatible'
  const apiKey = providerKey(kind, flags, env)
  if (settings.customModel === true) {
    throw new CliError(
      'HOST_OPTIONS_INVALID',
      'The run was made with a model host built from a provider or model object, which a run cannot record: resume it from code with the same host, or pass --host and --model.',
    )
  }
  if (settings.apiKey === 'given' && (apiKey === undefined || apiKey === '')) {
    const variable = kind === 'openai-compatible' ? 'LOCUS_API_KEY' : PROVIDER_KEY_VARIABLES[kind]
    throw new CliError('HOST_OPTIONS_INVALID', `The run was made with the ${kind} provider and an API key, which is never recorded: set ${variable} or pass --api-key to resume it.`)
  }
  try {
    const options = aiSdkHostOptionsFromSettings(recorded, { apiKey })
    const host = createAiSdkHost({
      ...options,
      ...(flags.baseUrl === undefined ? {} : { baseURL: flags.baseUrl }),
      ...(flags.model === undefined ? {} : { modelId: flags.model }),
      ...(launchMode === 'interactive' || launchMode === 'background' ? { launchMode } : {}),
      ...turnAndStreamOptions(flags, options.turnBudget),
    })
    const model = flags.model ?? options.modelId ?? 'its model'
    const baseURL = flags.baseUrl ?? options.baseURL
    return { kind, host, description: `${kind} (${model}${baseURL === undefined ? '' : ` at ${baseURL}`}, as the run recorded it)` }
  } catch (error) {
    if (isAiSdkHostOptionsError(error)) throw new CliError('HOST_OPTIONS_INVALID', error.message, { cause: error })
    throw error
  }
}

/** The model host options the turn, stream and rate-limit flags set; empty when none was given. */
function turnAndStreamOptions(
  flags: HostFlags,
  recordedTurnBudget?: unknown,
): { turnBudget?: { totalMs?: number | null; idleMs?: number | null }; streaming?: false; rateLimits?: readonly RateLimit[] } {
  const turnBudget = {
    ...(typeof recordedTurnBudget === 'object' && recordedTurnBudget !== null ? (recordedTurnBudget as { totalMs?: number | null; idleMs?: number | null }) : {}),
    ...(flags.turnTimeout === undefined ? {} : { totalMs: flags.turnTimeout === 'off' ? null : flags.turnTimeout }),
    ...(flags.turnIdle === undefined ? {} : { idleMs: flags.turnIdle === 'off' ? null : flags.turnIdle }),
  }
  return {
    ...(flags.turnTimeout === undefined && flags.turnIdle === undefined ? {} : { turnBudget }),
    ...(flags.stream === false ? { streaming: false as const } : {}),
    ...(flags.rateLimit === undefined ? {} : { rateLimits: flags.rateLimit }),
  }
}

/** The turn and stream flags given, by name, for an error that says they need a model host. */
function turnAndStreamFlagsGiven(flags: HostFlags): string[] {
  return [
    ...(flags.turnTimeout === undefined ? [] : ['--turn-timeout']),
    ...(flags.turnIdle === undefined ? [] : ['--turn-idle']),
    ...(flags.stream === false ? ['--no-stream'] : []),
    ...(flags.rateLimit === undefined ? [] : ['--rate-limit']),
  ]
}

function isRecordedModelHost(settings: unknown): boolean {
  return typeof settings === 'object' && settings !== null && (settings as { host?: unknown }).host === 'ai-sdk'
}

/** A model id each provider knows, for the error that asks for `--model`. */
const EXAMPLE_MODELS: Readonly<Record<ProviderName, string>> = {
  'openai-compatible': 'llama3.2',
  openai: 'gpt-4o-mini',
  anthropic: 'claude-sonnet-4-5',
  google: 'gemini-2.5-flash',
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}

/**
 * The API key a provider is given: `--api-key`, else its usual variable
 * (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GOOGLE_GENERATIVE_AI_API_KEY`);
 * `LOCUS_API_KEY` for an OpenAI-compatible server, and for OpenAI before
 * `OPENAI_API_KEY`, as before providers had their own variables.
 */
function providerKey(kind: ProviderName, flags: HostFlags, env: CliEnv): string | undefined {
  const given = nonEmpty(flags.apiKey)
  if (given !== undefined) return given
  switch (kind) {
    case 'openai-compatible':
      return nonEmpty(env.LOCUS_API_KEY)
    case 'openai':
      return nonEmpty(env.LOCUS_API_KEY) ?? nonEmpty(env.OPENAI_API_KEY)
    case 'anthropic':
      return nonEmpty(env.ANTHROPIC_API_KEY)
    case 'google':
      return nonEmpty(env.GOOGLE_GENERATIVE_AI_API_KEY)
  }
}

async function modelHost(kind: ProviderName, flags: HostFlags, env: CliEnv, launchMode?: string): Promise<ChosenHost> {
  // LOCUS_MODEL_BASE_URL names an OpenAI-style server; Anthropic and Google have their own default endpoints.
  const baseURL = flags.baseUrl ?? (kind === 'openai-compatible' || kind === 'openai' ? env.LOCUS_MODEL_BASE_URL : undefined)
  const modelId = flags.model ?? env.LOCUS_MODEL
  const apiKey = providerKey(kind, flags, env)
  if (kind === 'openai-compatible' && (baseURL === undefined || baseURL === '')) {
    throw new CliError('HOST_OPTIONS_INVALID', '--host openai-compatible needs --base-url (or LOCUS_MODEL_BASE_URL), such as http://localhost:11434/v1.')
  }
  if (modelId === undefined || modelId === '') {
    throw new CliError('HOST_OPTIONS_INVALID', `--host ${kind} needs --model (or LOCUS_MODEL), such as ${EXAMPLE_MODELS[kind]}.`)
  }
  // Loaded only when asked for: the AI SDK is not needed for scripted runs.
  const { createAiSdkHost, isAiSdkHostOptionsError, PROVIDER_KEY_VARIABLES } = await import('@locus/host-ai-sdk')
  if (kind !== 'openai-compatible' && apiKey === undefined) {
    throw new CliError('HOST_OPTIONS_INVALID', `The ${kind} provider needs an API key: set ${PROVIDER_KEY_VARIABLES[kind]} or pass --api-key.`)
  }
  try {
    const host = createAiSdkHost({
      ...(baseURL === undefined || baseURL === '' ? {} : { baseURL }),
      modelId,
      ...(apiKey === undefined || apiKey === '' ? {} : { apiKey }),
      api: kind,
      ...(launchMode === 'interactive' || launchMode === 'background' ? { launchMode } : {}),
      ...turnAndStreamOptions(flags),
    })
    return { kind, host, description: `${kind} (${modelId}${baseURL === undefined ? '' : ` at ${baseURL}`})` }
  } catch (error) {
    if (isAiSdkHostOptionsError(error)) throw new CliError('HOST_OPTIONS_INVALID', error.message, { cause: error })
    throw error
  }
}

/** The environment variables hosts read. */
export interface CliEnv {
  readonly LOCUS_MODEL_BASE_URL?: string | undefined
  readonly LOCUS_MODEL?: string | undefined
  readonly LOCUS_API_KEY?: string | undefined
  readonly OPENAI_API_KEY?: string | undefined
  readonly ANTHROPIC_API_KEY?: string | undefined
  readonly GOOGLE_GENERATIVE_AI_API_KEY?: string | undefined
}

/**
 * Chooses the run's host from flags and environment:
 *
 * - `--host scripted`: the scripted host, from `--fixtures <file>` or else the
 *   workflow's sibling `<name>.fixtures.json`;
 * - `--host openai-compatible` (or `openai`, `anthropic`, `google`; `--provider`
 *   names the same): a real model through `@locus/host-ai-sdk`, from
 *   `--base-url`, `--model`, `--api-key` or `LOCUS_MODEL_BASE_URL`,
 *   `LOCUS_MODEL`, and the provider's key variable (`LOCUS_API_KEY` for an
 *   OpenAI-compatible server, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
 *   `GOOGLE_GENERATIVE_AI_API_KEY`);
 * - `--host none`: no host.
 *
 * Without `--host`: `--fixtures` means scripted; else `LOCUS_MODEL_BASE_URL`
 * means openai-compatible; else `preferred` (the host a resumed run used);
 * else a sibling fixtures file means scripted; else none.
 *
 * @throws {CliError} `CLI_USAGE` for an unknown host, `HOST_OPTIONS_INVALID` for unusable fixtures or model settings.
 */
export async function createHost(
  flags: HostFlags,
  context: {
    readonly cwd: string
    readonly env: CliEnv
    readonly workflowPath: string
    readonly preferred?: string | null | undefined
    /** `run_start.options.hostSettings` of the run being resumed or replayed. */
    readonly recordedSettings?: unknown
    /** The run's launch mode, so a model host picks its turn-budget defaults from it. */
    readonly launchMode?: string | undefined
  },
): Promise<ChosenHost> {
  const sibling = siblingFixturesPath(context.workflowPath)
  if (flags.modelHost !== undefined && flags.host !== undefined && flags.modelHost !== flags.host) {
    throw new CliError('CLI_USAGE', `--model-host ${flags.modelHost} and --host ${flags.host} disagree: --host is the older name of --model-host, pass one.`)
  }
  const named = flags.modelHost ?? flags.host
  if (flags.provider !== undefined) {
    if (!isProviderName(flags.provider)) {
      throw new CliError('CLI_USAGE', `Unknown provider "${flags.provider}": --provider is one of ${PROVIDER_NAMES.join(', ')}.`)
    }
    if (named !== undefined && named !== flags.provider) {
      throw new CliError('CLI_USAGE', `--provider ${flags.provider} and --model-host ${named} disagree: --provider names the model host, pass one.`)
    }
  }
  let kind = named ?? flags.provider
  if (kind === undefined) {
    if (flags.fixtures !== undefined) kind = 'scripted'
    else if (context.env.LOCUS_MODEL_BASE_URL !== undefined && context.env.LOCUS_MODEL_BASE_URL !== '') kind = 'openai-compatible'
    else if (context.preferred === 'scripted' && existsSync(sibling)) kind = 'scripted'
    else if (isRecordedModelHost(context.recordedSettings)) return recordedModelHost(context.recordedSettings, flags, context.env, context.launchMode)
    else if (context.preferred !== undefined && context.preferred !== null && context.preferred !== 'scripted') {
      throw new CliError(
        'HOST_OPTIONS_INVALID',
        `The run was made with the host "${context.preferred}": pass --host openai-compatible --base-url <url> --model <id> ` +
          '(or set LOCUS_MODEL_BASE_URL and LOCUS_MODEL), or --host none to continue without one.',
      )
    }
    else kind = existsSync(sibling) ? 'scripted' : 'none'
  }
  if (!(HOST_KINDS as readonly string[]).includes(kind)) {
    throw new CliError('CLI_USAGE', `Unknown host "${kind}": --host is one of ${HOST_KINDS.join(', ')}.`)
  }
  if (kind !== 'scripted' && flags.fixtures !== undefined) {
    throw new CliError('CLI_USAGE', `--fixtures belongs to --host scripted, but --host is ${kind}.`)
  }
  const modelOnly = turnAndStreamFlagsGiven(flags)
  if ((kind === 'scripted' || kind === 'none') && modelOnly.length > 0) {
    throw new CliError('CLI_USAGE', `${modelOnly.join(', ')} ${modelOnly.length === 1 ? 'belongs' : 'belong'} to a model host (--model-host ${PROVIDER_NAMES.join(', ')}), but the host is ${kind}.`)
  }
  switch (kind as HostKind) {
    case 'scripted': {
      const fixtures = flags.fixtures === undefined ? sibling : resolve(context.cwd, flags.fixtures)
      if (flags.fixtures === undefined && !existsSync(fixtures)) {
        throw new CliError('HOST_OPTIONS_INVALID', `--host scripted needs --fixtures <file>; no ${shown(fixtures, context.cwd)} beside the workflow either.`)
      }
      return scriptedHost(fixtures, context.cwd)
    }
    case 'openai-compatible':
    case 'openai':
    case 'anthropic':
    case 'google':
      return modelHost(kind as ProviderName, flags, context.env, context.launchMode)
    case 'none':
      return { kind: 'none', host: undefined, description: 'none (agent() calls fail as sdk-unavailable)' }
  }
}
