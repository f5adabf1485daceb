import { type StdioTransportSettings, type TriggerTransport, createStdioTransport } from '@locus/protocol'

/**
 * The transport to a worker started by the shell from `--worker <command>`,
 * such as `python3 tools.py`: the child starts on the first remote call. Its
 * settings (the shell and the command, never the environment) are recorded
 * in `run_start`, so `locus resume` starts the same worker again.
 */
export function shellWorkerTransport(command: string, cwd: string): TriggerTransport {
  return createStdioTransport(
    process.platform === 'win32' ? { command: 'cmd', args: ['/c', command], cwd } : { command: 'sh', args: ['-c', `exec ${command}`], cwd },
  )
}

/**
 * The worker a resumed run uses: `--worker <command>` when given, else the
 * stdio worker its `run_start` recorded, else none.
 */
export function resumeWorkerTransport(flag: string | undefined, recorded: StdioTransportSettings | undefined, cwd: string): TriggerTransport | undefined {
  if (flag !== undefined) return shellWorkerTransport(flag, cwd)
  if (recorded === undefined) return undefined
  return createStdioTransport({ command: recorded.command, args: recorded.args, cwd: recorded.cwd ?? cwd })
}

/** How a recorded or given worker reads in a header line: its command as typed, without the shell around it. */
export function describeWorker(transport: TriggerTransport | undefined): string | undefined {
  const settings = transport?.settings
  if (settings === undefined) return undefined
  const shell = (settings.command === 'sh' && settings.args[0] === '-c') || (settings.command === 'cmd' && settings.args[0] === '/c')
  return shell ? (settings.args[1] ?? '').replace(/^exec /, '') : [settings.command, ...settings.args].join(' ')
}
