import { parseHTML } from 'linkedom'

/** The few DOM calls the inspector's page tests make. */
export interface El {
  readonly textContent: string | null
  getAttribute(name: string): string | null
  querySelector(selector: string): El | null
  querySelectorAll(selector: string): ArrayLike<El> & Iterable<El>
}

/** A page's document, parsed as a browser would without running its script. */
export const parse = (text: string): El => (parseHTML(text) as unknown as { document: El }).document
/** An element's text with its whitespace collapsed. */
export const textOf = (element: El | null | undefined): string => (element?.textContent ?? '').replace(/\s+/g, ' ').trim()
/** A table's body rows as cell texts (the row header first). */
export const rowsOf = (document: El, selector: string): string[][] => [...document.querySelectorAll(`${selector} tbody tr`)].map((row) => [...row.querySelectorAll('th, td')].map((cell) => textOf(cell)))
