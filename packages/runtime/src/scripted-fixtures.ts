import { FailureCauseSchema } from '@locus/outcome'
import { z } from 'zod'
import { RuntimeInputError } from './errors.js'
import type { ScriptedHostOptions, ScriptedMatch, ScriptedStep } from './scripted-host.js'

/** Where the fixtures format is explained, named in every complaint about a fixtures file. */
const GUIDE = 'docs/scripted-host.md'

const usageSchema = z
  .object({
    inputTokens: z.number().int().nonnegative().describe('Input tokens the turn reports.'),
    outputTokens: z.number().int().nonnegative().describe('Output tokens the turn reports.'),
  })
  .strict()
const delayMs = z.number().nonnegative().describe("Milliseconds to wait (on the host's clock) before the step plays; a cancellation or timeout during the wait ends the turn as aborted.")

/** Each kind of step, by the key that names it. A `text` step is one with none of the other keys. */
const STEP_KINDS = {
  text: z
    .object({
      text: z.string().describe('The answer.'),
      delayMs: delayMs.optional(),
      usage: usageSchema.optional(),
      toolCalls: z
        .array(
          z
            .object({
              tool: z.string().describe("The name of a tool the agent call was given (the workflow's tools)."),
              args: z.unknown().optional().describe('Its arguments. @default {}'),
            })
            .strict(),
        )
        .optional()
        .describe('Tools to call, in order, before answering.'),
    })
    .strict()
    .describe('Answer with text, optionally after a delay and after calling tools.'),
  hang: z
    .object({ hang: z.literal(true), partial: z.string().optional().describe('Text to stream first: a half answer that the abort then discards.') })
    .strict()
    .describe('Never answer: wait until the turn is aborted (a call timeout, a cancellation).'),
  throw: z
    .object({
      throw: FailureCauseSchema.describe('The failure cause of the host error, such as sdk-unavailable or host-turn-timeout.'),
      message: z.string().optional().describe('The error message. @default "scripted host error: <cause>"'),
      delayMs: delayMs.optional(),
      partial: z.string().optional().describe('Text to stream before throwing: a half answer the failure discards.'),
    })
    .strict()
    .describe('Throw a host error with this cause instead of answering.'),
  stop: z
    .object({ stop: z.literal('length'), text: z.string().describe('The truncated text.') })
    .strict()
    .describe("Stop at the provider's output-token limit with truncated text."),
  fail: z
    .object({
      fail: FailureCauseSchema.describe('The failure cause, such as provider-error or unparseable-answer.'),
      reason: z.string().optional().describe('Why. @default "scripted <cause>"'),
      usage: usageSchema.optional().describe('Tokens the failed turn still spent, priced like an answer\'s.'),
    })
    .strict()
    .describe('Answer with a failure the host classified itself.'),
  empty: z.object({ empty: z.literal(true) }).strict().describe('Answer with nothing.'),
} as const
type StepKind = keyof typeof STEP_KINDS
const MARKED_KINDS = ['hang', 'throw', 'stop', 'fail', 'empty'] as const satisfies readonly StepKind[]

const stepSchema = z.union([STEP_KINDS.text, STEP_KINDS.hang, STEP_KINDS.throw, STEP_KINDS.stop, STEP_KINDS.fail, STEP_KINDS.empty])

const matchSchema = z
  .object({
    agent: z.string().optional().describe('The agent name the call uses, exactly.'),
    label: z.string().optional().describe("The call's label, exactly."),
    phase: z.string().optional().describe("The call's phase, exactly."),
    prompt: z.string().optional().describe('A substring of the prompt.'),
    promptPattern: z
      .string()
      .optional()
      .describe('A JavaScript regular expression tested against the prompt.')
      .refine((pattern) => pattern === undefined || isRegExp(pattern), { error: 'not a valid regular expression' }),
  })
  .strict()
  .describe('Which turns the rule answers: every field given must match. A rule without match answers every turn.')

const ruleSchema = z
  .object({
    match: matchSchema.optional(),
    steps: z
      .array(stepSchema)
      .min(1)
      .describe("What the rule's turns play, one step per turn in order; the last step repeats once the list is used up."),
  })
  .strict()

const fixturesSchema = z
  .object({
    $schema: z.string().optional().describe('Where this schema is, for editors: ignored by locus.'),
    rules: z.array(ruleSchema).describe('Rules tried in order for each turn; the first whose match fits answers it.'),
  })
  .strict()

/** The JSON form of scripted host rules, as a fixtures file holds them. */
export type ScriptedFixtures = z.input<typeof fixturesSchema>

function isRegExp(pattern: string): boolean {
  try {
    new RegExp(pattern)
    return true
  } catch {
    return false
  }
}

/**
 * The scripted host's fixtures format as a JSON Schema (draft 2020-12). The
 * package ships the same document as `@locus/runtime/fixtures.schema.json`;
 * point a fixtures file's `$schema` at it for completion in an editor.
 */
export function scriptedFixturesJsonSchema(): Record<string, unknown> {
  const { $schema: _schema, ...generated } = z.toJSONSchema(fixturesSchema, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://locus.dev/schemas/fixtures.schema.json',
    title: `Locus scripted host fixtures (locus run --host scripted --fixtures <file>); see ${GUIDE}`,
    ...generated,
  }
}

/**
 * Validates fixtures read from JSON (a `promptPattern` string becomes a
 * regular expression) and returns host options. Bad fixtures throw a
 * `RUN_OPTIONS_INVALID` error with one line per wrong field: its path from
 * `source` and what is expected there.
 */
export function parseScriptedFixtures(input: unknown, source = 'fixtures'): ScriptedHostOptions {
  const parsed = fixturesSchema.safeParse(input)
  if (!parsed.success) {
    const issues = describeIssues(parsed.error, input, source)
    throw new RuntimeInputError('RUN_OPTIONS_INVALID', `Invalid scripted host fixtures (the format: ${GUIDE}; JSON Schema: @locus/runtime/fixtures.schema.json):\n  ${issues.join('\n  ')}`, issues)
  }
  return {
    rules: parsed.data.rules.map((rule) => {
      const { promptPattern, ...rest } = rule.match ?? {}
      const match: ScriptedMatch = {
        ...Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined)),
        ...(promptPattern === undefined ? {} : { prompt: new RegExp(promptPattern) }),
      }
      return { match, steps: rule.steps as ScriptedStep[] }
    }),
  }
}

type Path = readonly PropertyKey[]

function pathOf(source: string, path: Path): string {
  return path.length === 0 ? source : `${source}.${path.map(String).join('.')}`
}

function valueAt(input: unknown, path: Path): unknown {
  // Walks plain JSON: objects and arrays.
  let value = input
  for (const key of path) value = typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined
  return value
}

/** The keys an object at `path` may have, when the path leads through plain objects and arrays of the schema. */
function keysAt(schema: z.ZodType, path: Path): string[] | undefined {
  let current: z.ZodType = schema
  for (const key of path) {
    while (current instanceof z.ZodOptional) current = current.unwrap() as z.ZodType
    if (current instanceof z.ZodObject) current = (current.shape as Record<string, z.ZodType>)[String(key)] ?? z.never()
    else if (current instanceof z.ZodArray) current = current.element as z.ZodType
    else return undefined
  }
  while (current instanceof z.ZodOptional) current = current.unwrap() as z.ZodType
  return current instanceof z.ZodObject ? Object.keys(current.shape) : undefined
}

/** One line per issue, `path: what is wrong; what is expected`. A wrong step is explained by the kind of step it looks like. */
function describeIssues(error: z.ZodError, input: unknown, source: string, schema: z.ZodType = fixturesSchema, base: Path = []): string[] {
  const lines: string[] = []
  const stepsDescribed = new Set<string>()
  for (const issue of error.issues) {
    const path = [...base, ...issue.path]
    // A step of a rule: rules.<n>.steps.<m>, and anything under it.
    if (schema === fixturesSchema && issue.path[0] === 'rules' && issue.path[2] === 'steps' && issue.path.length >= 4) {
      const stepPath = issue.path.slice(0, 4)
      const key = stepPath.map(String).join('.')
      if (!stepsDescribed.has(key)) {
        stepsDescribed.add(key)
        lines.push(...describeStep(valueAt(input, stepPath), source, stepPath))
      }
      continue
    }
    if (issue.code === 'unrecognized_keys') {
      const allowed = keysAt(schema, issue.path)
      lines.push(`${pathOf(source, path)}: ${issue.message}${allowed === undefined ? '' : `; expected only ${allowed.map((key) => `"${key}"`).join(', ')}`}`)
      continue
    }
    lines.push(`${pathOf(source, path)}: ${issue.message}`)
  }
  return lines
}

function describeStep(step: unknown, source: string, path: Path): string[] {
  const where = pathOf(source, path)
  const kindsList = Object.keys(STEP_KINDS).map((kind) => `"${kind}"`).join(', ')
  if (typeof step !== 'object' || step === null || Array.isArray(step)) {
    return [`${where}: expected a step object with one of the keys ${kindsList}, such as { "text": "..." }; got ${JSON.stringify(step)}`]
  }
  const marked = MARKED_KINDS.filter((kind) => kind in step)
  if (marked.length > 1) return [`${where}: a step is of one kind, but this one has ${marked.map((kind) => `"${kind}"`).join(' and ')}; split it into steps`]
  const kind: StepKind | undefined = marked[0] ?? ('text' in step ? 'text' : undefined)
  if (kind === undefined) {
    return [`${where}: a step needs one of the keys ${kindsList}; it has ${Object.keys(step).map((key) => `"${key}"`).join(', ') || 'none'}`]
  }
  const variant = STEP_KINDS[kind]
  const checked = variant.safeParse(step)
  if (checked.success) return [`${where}: not a valid step`]
  return describeIssues(checked.error, step, source, variant, path).map((line) => `${line} (in a "${kind}" step)`)
}
