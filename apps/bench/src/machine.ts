/**
 * Where and with what a comparison ran: the machine, the Node version and
 * the versions of every compared package, read from the installed
 * package.json files.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync, realpathSync } from 'node:fs'
import { cpus, loadavg, platform, release, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface MachineInfo {
  readonly cpuModel: string
  readonly cpuCount: number
  readonly totalMemoryBytes: number
  readonly node: string
  readonly os: string
  /** One-minute load average when the comparison started: other work on a shared machine shows here. */
  readonly loadAverage: number
}

export interface PackageVersion {
  readonly name: string
  readonly version: string
}

/** Describes the machine this process runs on. */
export function describeMachine(): MachineInfo {
  const processors = cpus()
  return {
    cpuModel: processors[0]?.model.trim() ?? 'unknown',
    cpuCount: processors.length,
    totalMemoryBytes: totalmem(),
    node: process.version,
    os: `${platform()} ${release()}`,
    loadAverage: loadavg()[0] ?? Number.NaN,
  }
}

const benchRoot = join(dirname(fileURLToPath(import.meta.url)), '..')

function versionAt(packageDir: string): string {
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version?: unknown }
  return typeof manifest.version === 'string' ? manifest.version : 'unknown'
}

/** The installed directory of a package this one depends on. */
function installedDir(name: string): string {
  return realpathSync(join(benchRoot, 'node_modules', name))
}

/** The git commit the Locus packages were measured at, with `+dirty` for uncommitted changes. */
function locusRevision(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: benchRoot, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--', '../../packages'], { cwd: benchRoot, encoding: 'utf8' }).trim() !== ''
    return `${commit}${dirty ? '+dirty' : ''}`
  } catch {
    return 'unknown revision'
  }
}

/** Versions of the compared packages as installed. LangGraph's checkpointer package sits beside LangGraph. */
export function packageVersions(): PackageVersion[] {
  const revision = locusRevision()
  const langgraphDir = installedDir('@langchain/langgraph')
  const versions: PackageVersion[] = ['@locus/runtime', '@locus/groups', '@locus/retry', '@locus/journal', '@locus/store'].map((name) => ({
    name,
    version: `${versionAt(installedDir(name))} (workspace, ${revision})`,
  }))
  for (const name of ['effect', '@langchain/langgraph', '@langchain/core', 'p-limit', 'p-retry', 'zod']) {
    versions.push({ name, version: versionAt(installedDir(name)) })
  }
  versions.push({ name: '@langchain/langgraph-checkpoint', version: versionAt(join(langgraphDir, '..', 'langgraph-checkpoint')) })
  return versions
}
