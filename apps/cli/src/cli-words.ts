/** Run options named in runtime messages, as the flags a CLI user sets them with. */
const OPTION_FLAGS: readonly (readonly [RegExp, string])[] = [
  [/\bmaxTotalAgentInvocations\b/g, '--max-agents'],
  [/\bdeadlineMs\b/g, '--deadline'],
  [/\bretryBudget\b/g, '--retry-budget'],
  [/\bbudgets\.maxCostUsd\b/g, '--max-cost'],
]

/** A runtime message in the words of the command line: run options become the flags that set them. */
export function inCliWords(message: string): string {
  return OPTION_FLAGS.reduce((text, [option, flag]) => text.replace(option, flag), message)
}
