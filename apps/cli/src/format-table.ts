import { stripAnsi } from './style.js'

/**
 * Lays rows out in columns separated by two spaces; the first row is the
 * header. Cells may carry ANSI colour: widths count what a reader sees.
 *
 * @example
 * ```ts
 * formatTable([['RUN', 'STATE'], ['r-1', 'completed']])
 * // RUN  STATE
 * // r-1  completed
 * ```
 */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = []
  for (const row of rows) {
    row.forEach((cell, column) => {
      widths[column] = Math.max(widths[column] ?? 0, stripAnsi(cell).length)
    })
  }
  return rows
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell + ' '.repeat((widths[column] ?? 0) - stripAnsi(cell).length)))
        .join('  '),
    )
    .join('\n')
}
