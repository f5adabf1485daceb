import { readdirSync, statSync } from 'node:fs'
import { extname, join, resolve } from 'node:path'
import { type ScheduleDefinition, type WorkflowDefinition, bindSchedules, isWorkflowDefinition } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import { WORKFLOW_EXTENSIONS, loadWorkflowModule } from '../load-workflow.js'

/**
 * Loads the workflows named by `--workflows`: files, or directories whose
 * workflow files (not tests, not fixtures) are loaded. Each must export a
 * `defineWorkflow` definition (a bare function has no name to serve it by),
 * and no two may share a name.
 */
export async function loadWorkflows(
  entries: readonly string[],
  cwd: string,
): Promise<{ readonly workflows: WorkflowDefinition[]; readonly paths: string[]; readonly schedules: readonly ScheduleDefinition[] }> {
  if (entries.length === 0) throw new CliError('CLI_USAGE', 'Pass --workflows <dir or file> (repeatable) to say which workflows to offer.')
  const files: string[] = []
  for (const entry of entries) {
    const path = resolve(cwd, entry)
    let isDirectory = false
    try {
      isDirectory = statSync(path).isDirectory()
    } catch {
      throw new CliError('WORKFLOW_FILE_NOT_FOUND', `No workflow file or directory ${entry}.`)
    }
    if (!isDirectory) {
      files.push(path)
      continue
    }
    for (const name of readdirSync(path).sort()) {
      if (!(WORKFLOW_EXTENSIONS as readonly string[]).includes(extname(name))) continue
      if (/\.(test|spec|fixtures|d)\./.test(name)) continue
      files.push(join(path, name))
    }
  }
  const workflows: WorkflowDefinition[] = []
  const paths: string[] = []
  const names = new Map<string, string>()
  const schedules: ScheduleDefinition[] = []
  for (const file of files) {
    const module = await loadWorkflowModule(file, cwd)
    schedules.push(...module.schedules)
    const loaded = module.workflow
    if (loaded === undefined) {
      if (module.schedules.length > 0) continue
      throw new CliError(
        'WORKFLOW_EXPORT_MISSING',
        `${file} has no workflow export and no schedules: export a workflow as default (export default defineWorkflow({ ... })) or as \`export const workflow\`, or schedules as \`export const schedules = [defineSchedule({ ... })]\`. ` +
          (module.exportNames.length === 0 ? 'The module exports nothing.' : `It exports: ${module.exportNames.join(', ')}.`),
      )
    }
    if (!isWorkflowDefinition(loaded.workflow) && typeof loaded.workflow === 'function') {
      throw new CliError('WORKFLOW_EXPORT_MISSING', `${file} exports a bare function; wrap it in defineWorkflow({ name, run }) so it can be offered by name.`)
    }
    const workflow = loaded.workflow
    const other = names.get(workflow.name)
    if (other !== undefined) throw new CliError('CLI_USAGE', `Two workflows are named "${workflow.name}": ${other} and ${file}. Give each a unique name.`)
    names.set(workflow.name, file)
    workflows.push(workflow)
    paths.push(loaded.path)
  }
  if (workflows.length === 0) throw new CliError('CLI_USAGE', `No workflow files in ${entries.join(', ')}.`)
  // A schedule naming an unknown workflow, or whose input its workflow refuses, stops the process before it serves.
  bindSchedules(schedules, workflows)
  return { workflows, paths, schedules }
}
