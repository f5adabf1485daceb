/**
 * Finds the runnable TypeScript snippets of a Markdown document, so a test can
 * run each one as a user would and keep the docs from drifting from the code.
 * A ```text block that follows a snippet (with at most `maxLinesBetween` lines
 * of prose in between) is the output the snippet must print.
 *
 * @param {string} document a name for reports, such as the file's path
 * @param {string} text the Markdown
 * @param {{ select?: (code: string) => boolean, maxLinesBetween?: number }} [options]
 * @returns {Array<{ document: string, line: number, code: string, expected: string | undefined }>}
 */
export function extractSnippets(document, text, options = {}) {
  const select = options.select ?? (() => true)
  const maxLinesBetween = options.maxLinesBetween ?? 0
  const blocks = [...text.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```\s*$/gm)]
  const snippets = []
  blocks.forEach((block, index) => {
    const [, language, code = ''] = block
    if (language !== 'ts' || !select(code)) return
    const next = blocks[index + 1]
    const between = next === undefined ? '' : text.slice(block.index + block[0].length, next.index).trim()
    const closeEnough = between === '' || between.split('\n').length <= maxLinesBetween
    const expected = next?.[1] === 'text' && closeEnough ? next[2] : undefined
    snippets.push({ document, line: text.slice(0, block.index).split('\n').length, code, expected })
  })
  return snippets
}
