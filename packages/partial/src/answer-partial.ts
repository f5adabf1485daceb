import { prepareWorkflowResult } from '@locus/outcome'
import type { Answer, GatheredResult } from './answer.js'
import type { Assessment } from './assess-partial.js'
import { describeGap, describeOutcome, describeStep, gapCaveat } from './describe-outcome.js'
import { PartialInputError } from './partial-error.js'
import type { Plan } from './plan.js'
import { type PromptName, fillPromptTemplate, loadPromptTemplate } from './prompt-template.js'
import { type ToolResultInput, parseToolResult } from './tool-result.js'

/** What a run has gathered: the question, the plan, and the result of each step that produced one. */
export interface RunSnapshot {
  readonly question: string
  readonly plan: Plan
  /** Results keyed by step number, in any {@link ToolResultInput} shape; a step without an entry was not reached. */
  readonly results: ReadonlyMap<number, ToolResultInput>
}

/** Everything `generate` needs to write an answer. */
export interface GenerationRequest {
  /** Which shipped template `prompt` was filled from. */
  readonly promptName: PromptName
  /** The filled prompt, gaps included, ready for a model. */
  readonly prompt: string
  readonly question: string
  /** The successful results, found and empty alike. */
  readonly sources: readonly GatheredResult[]
  /** One `could not check X (reason)` line per gap; empty for a complete run. */
  readonly gaps: readonly string[]
}

/** What `generate` returns: the prose only. Caveats come from code, never from the model. */
export interface GeneratedText {
  readonly text: string
}

/** Writes the prose of an answer: a model call in production, a plain function in tests. */
export type GenerateAnswer = (request: GenerationRequest) => Promise<GeneratedText>

/**
 * Answers from what survived.
 *
 * - `cannot_answer`: does not call `generate`; says it could not answer and
 *   why, and still returns every successful result in `gathered`.
 * - `partial`: fills the shipped `answer-partial` prompt with the gaps, so the
 *   model writes around them, and attaches one caveat per gap as a field.
 * - `complete`: fills the `answer` prompt; no caveats.
 *
 * @example
 * ```ts
 * const answer = await answerPartial(run, assessPartial(run.plan, run.results), async (request) => ({
 *   text: await model.complete(request.prompt),
 * }))
 * console.log(renderAnswer(answer))
 * ```
 */
export async function answerPartial(run: RunSnapshot, assessment: Assessment, generate: GenerateAnswer): Promise<Answer> {
  const gathered = gatherResults(run)
  switch (assessment.kind) {
    case 'cannot_answer': {
      const required = assessment.gaps.filter((gap) => gap.criticality === 'required')
      const subject = required.length > 0 ? required.map((gap) => gap.description).join(', ') : assessment.missing.join(', ')
      return {
        text: `I could not answer this: a check the answer depends on did not complete (${subject}).`,
        caveats: assessment.gaps.map(gapCaveat),
        gaps: assessment.gaps,
        ok: false,
        partial: false,
        found: false,
        gathered,
      }
    }
    case 'partial': {
      const gaps = assessment.gaps.map(describeGap)
      const generated = await generateChecked(generate, 'answer-partial', run.question, gathered, gaps)
      return { text: generated.text, caveats: assessment.gaps.map(gapCaveat), gaps: assessment.gaps, ok: true, partial: true, found: true, gathered }
    }
    case 'complete': {
      const generated = await generateChecked(generate, 'answer', run.question, gathered, [])
      return { text: generated.text, caveats: [], gaps: [], ok: true, partial: false, found: true, gathered }
    }
    default:
      throw new PartialInputError('assessment.kind', `${JSON.stringify((assessment as { kind?: unknown }).kind)} is not complete, partial or cannot_answer; pass what assessPartial() returned.`)
  }
}

/** The successful results of a run, in plan order. */
function gatherResults(run: RunSnapshot): GatheredResult[] {
  const gathered: GatheredResult[] = []
  for (const step of run.plan.steps) {
    const given = run.results.get(step.n)
    const result = given === undefined ? undefined : parseToolResult(given, `run.results.get(${step.n})`)
    if (result?.ok !== true) continue
    gathered.push({
      step: step.n,
      tool: step.tool,
      description: describeStep(step),
      state: result.state,
      data: result.data,
      summary: describeOutcome(step, result),
    })
  }
  return gathered
}

function formatSources(sources: readonly GatheredResult[]): string {
  if (sources.length === 0) return '(nothing)'
  return sources
    .map((source, index) => {
      const heading = `[${index + 1}] ${source.summary}`
      if (source.state === 'empty') return heading
      return `${heading}\n${JSON.stringify(prepareWorkflowResult(source.data), null, 2)}`
    })
    .join('\n\n')
}

async function generateChecked(
  generate: GenerateAnswer,
  promptName: PromptName,
  question: string,
  sources: readonly GatheredResult[],
  gaps: readonly string[],
): Promise<GeneratedText> {
  const template = await loadPromptTemplate(promptName)
  const prompt = fillPromptTemplate(template, {
    question,
    sources: formatSources(sources),
    gaps: gaps.map((gap) => `- ${gap}`).join('\n'),
  })
  const generated: unknown = await generate({ promptName, prompt, question, sources, gaps })
  if (typeof generated !== 'object' || generated === null || typeof (generated as { text?: unknown }).text !== 'string') {
    const got = generated === null ? 'null' : typeof generated === 'object' ? 'an object without a string text' : typeof generated
    throw new PartialInputError('generate() result', `expected { text: string }, got ${got}; return the model's prose as text.`)
  }
  return generated as GeneratedText
}
