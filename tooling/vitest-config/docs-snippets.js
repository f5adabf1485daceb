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

/**
 * Runs a snippet as a user would: written as a module into a fresh directory
 * inside `packageDir` (so its other imports resolve from the package's
 * node_modules), with each `from '<package>'` import pointed at the package's
 * TypeScript source, under Node with tsx. Resolves to what it printed.
 *
 * @param {{ code: string }} snippet
 * @param {{ packageDir: string, packageName: string, sourceEntry: string, env?: Record<string, string | undefined>, timeoutMs?: number }} options
 * @returns {Promise<string>}
 */
export async function runSnippet(snippet, options) {
  const { execFile } = await import('node:child_process')
  const { mkdtemp, rm, writeFile } = await import('node:fs/promises')
  const { join } = await import('node:path')
  const { pathToFileURL } = await import('node:url')
  const { promisify } = await import('node:util')
  const dir = await mkdtemp(join(options.packageDir, '.snippet-'))
  try {
    const file = join(dir, 'snippet.mts')
    await writeFile(file, snippet.code.replaceAll(`from '${options.packageName}'`, `from '${pathToFileURL(options.sourceEntry).href}'`))
    const { stdout } = await promisify(execFile)(process.execPath, ['--conditions=@locus/source', '--import', 'tsx', file], {
      cwd: options.packageDir,
      timeout: options.timeoutMs ?? 15_000,
      env: { ...process.env, ...options.env },
    })
    return stdout
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
