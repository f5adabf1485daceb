export interface DocsSnippet {
  readonly document: string
  /** Line of the opening fence, for test names. */
  readonly line: number
  readonly code: string
  /** The output the snippet must print, when a text block follows it. */
  readonly expected: string | undefined
}

export declare function extractSnippets(
  document: string,
  text: string,
  options?: { readonly select?: (code: string) => boolean; readonly maxLinesBetween?: number },
): DocsSnippet[]

export declare function runSnippet(
  snippet: { readonly code: string },
  options: {
    readonly packageDir: string
    readonly packageName: string
    readonly sourceEntry: string
    readonly env?: Readonly<Record<string, string | undefined>>
    readonly timeoutMs?: number
  },
): Promise<string>
