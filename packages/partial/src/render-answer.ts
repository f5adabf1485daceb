import type { Answer } from './answer.js'

/** How {@link renderAnswer} labels its sections. */
export interface RenderAnswerOptions {
  /**
   * Heading of the caveats section.
   * @default 'Caveats:'
   */
  readonly caveatsHeading?: string
  /**
   * Heading of the list of gathered results shown when the run could not answer.
   * @default 'Gathered before stopping:'
   */
  readonly gatheredHeading?: string
}

/**
 * Renders an answer for a reader: the text, then every caveat in its own
 * section that the text cannot reach, then, for an answer that could not be
 * given, what was gathered. Whatever happens to `text` before this call, the
 * caveats are printed.
 *
 * @example
 * ```ts
 * console.log(renderAnswer(answer))
 * // Henderson is on Net 45 ...
 * //
 * // Caveats:
 * // - Could not check the payment history (finance system did not respond).
 * ```
 */
export function renderAnswer(answer: Answer, options: RenderAnswerOptions = {}): string {
  const sections = [answer.text.trim()]
  if (answer.caveats.length > 0) {
    sections.push([options.caveatsHeading ?? 'Caveats:', ...answer.caveats.map((caveat) => `- ${caveat}`)].join('\n'))
  }
  if (!answer.found && answer.gathered.length > 0) {
    sections.push(
      [options.gatheredHeading ?? 'Gathered before stopping:', ...answer.gathered.map((result) => `- ${result.summary}`)].join('\n'),
    )
  }
  return sections.filter((section) => section.length > 0).join('\n\n')
}
