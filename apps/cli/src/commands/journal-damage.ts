import type { JournalDamage } from '@locus/journal'
import type { StoredExecution } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import type { CliIo } from '../cli-io.js'
import { displayPath } from '../format-summary.js'
import { journalPathOf } from './stored-run.js'

/** The commands that refuse a damaged journal unless told `--accept-damage`. */
export type DamageCheckedCommand = 'replay' | 'resume' | 'journal'

/** One execution's journal and the damaged places in it. */
export interface DamagedJournal {
  /** The journal file (or the store's location of it). */
  readonly path: string
  /** How `locus journal --execution` names it: `root`, or its id. */
  readonly execution: string
  readonly damage: readonly JournalDamage[]
}

/** What going on with the readable lines means, per command. */
const GOING_ON: Record<DamageCheckedCommand, { readonly refused: string; readonly flag: string; readonly warning: string }> = {
  replay: {
    refused: 'Nothing was replayed',
    flag: 'pass --accept-damage to replay the readable lines (a call whose lines were lost shows as missing)',
    warning: 'replaying the readable lines only; a call whose lines were lost shows as missing',
  },
  resume: {
    refused: 'Nothing was resumed',
    flag: 'pass --accept-damage to resume from the readable lines (a call with no readable end runs again live)',
    warning: 'resuming from the readable lines only; a call with no readable end runs again live',
  },
  journal: {
    refused: 'Nothing was printed',
    flag: 'pass --accept-damage to print the readable lines',
    warning: 'printing the readable lines only',
  },
}

/** The damaged journals among executions, in the order given. */
export function damagedJournals(executions: readonly StoredExecution[]): DamagedJournal[] {
  return executions
    .filter((execution) => execution.damage.length > 0)
    .map((execution) => ({
      path: journalPathOf(execution),
      execution: execution.info.kind === 'root' ? 'root' : execution.info.executionId,
      damage: execution.damage,
    }))
}

function listDamage(journals: readonly DamagedJournal[], cwd: string): string {
  return journals.map((journal) => [`  ${displayPath(journal.path, cwd)}:`, ...journal.damage.map((place) => `    ${place.problem}`)].join('\n')).join('\n')
}

/**
 * Stops `command` before it does anything when a journal it reads is damaged
 * (an unreadable line, a `seq` gap or repeat), naming each damaged line; with
 * `--accept-damage` it says on stderr what going on means and lets it go on.
 * A torn last line (a crash mid-write) is not damage. The journals are left
 * as they are: they are append-only.
 *
 * @throws {CliError} `RUN_JOURNAL_DAMAGED` (exit 2) when there is damage and `acceptDamage` is not set.
 */
export function checkJournalDamage(
  journals: readonly DamagedJournal[],
  context: { readonly runId: string; readonly command: DamageCheckedCommand; readonly acceptDamage: boolean | undefined; readonly io: CliIo },
): void {
  if (journals.length === 0) return
  const { runId, command, io } = context
  const places = journals.reduce((sum, journal) => sum + journal.damage.length, 0)
  const listed = listDamage(journals, io.cwd)
  const going = GOING_ON[command]
  if (context.acceptDamage === true) {
    io.stderr.write(`locus: run ${runId}'s journal is damaged (${places} place${places === 1 ? '' : 's'}); --accept-damage: ${going.warning}.\n${listed}\n`)
    return
  }
  const first = journals[0] as DamagedJournal
  const inspect =
    command === 'journal'
      ? `The journal file is left as it is; look at those lines in it, or ${going.flag}.`
      : `The journal files are left as they are. See the readable lines with \`locus journal ${runId} --execution ${first.execution} --accept-damage\`, or ${going.flag}.`
  throw new CliError(
    'RUN_JOURNAL_DAMAGED',
    `Run ${runId}'s journal is damaged (${places} place${places === 1 ? '' : 's'}): a line cannot be read, or lines are missing or repeated.\n${listed}\n${going.refused}. ${inspect}`,
  )
}
