import { readdirSync, statSync } from 'node:fs'
import { extname, join, resolve } from 'node:path'
import { type WorkflowDefinition, isWorkflowDefinition } from '@locus/runtime'
import { CliError } from '../cli-error.js'
import { WORKFLOW_EXTENSIONS, loadWorkflow } from '../load-workflow.js'

/**
 * Loads the workflows named by `--workflows`: files, or directories whose
 * workflow files (not tests, not fixtures) are loaded. Each must export a
 * `defineWorkflow` definition (a bare function has no name to serve it by),
 * and no two may share a name.
 */
export async function loadWorkflows(entries: readonly string[], cwd: string): Promise<{ readonly workflows: WorkflowDefinition[]; readonly paths: string[] }> {
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
  for (const file of files) {
    const loaded = await loadWorkflow(file, cwd)
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
  return { workflows, paths }
}
