import { type RunHandle, type Runtime, type RuntimeRunOptions, createRuntime } from './create-runtime.js'
import type { WorkflowDefinition } from './define.js'
import { type ReplayRunResult, type ResumeResult, replayResultOf, resumeResultOf } from './resume-run.js'
import type { RunOptions } from './run-options.js'
import { type RunResult, type WorkflowFunction, storeOf, toWorkflowDefinition } from './run-workflow-script.js'

/**
 * The one-call launchers below are `createRuntime` with one workflow and no
 * flow control of its own: the store the options name (`store`, or the file
 * store over `runsDir`), the host and rate limits the options carry. There is
 * no second road to a run.
 */
function runtimeFor(options: Pick<RunOptions, 'store' | 'runsDir' | 'cwd'>): Runtime {
  return createRuntime({ workflows: [], store: storeOf(options), flowControl: 'none' })
}

/** A launcher's options as the runtime takes them: where runs are stored is the runtime's, the rest is the run's. */
function runOptionsOf(options: RunOptions): RuntimeRunOptions {
  const { runsDir: _runsDir, cwd: _cwd, store: _store, ...run } = options
  return run
}

/**
 * Starts a workflow run (a definition or a bare async function) and resolves
 * once the run exists, with its {@link RunHandle}: the same handle
 * `createRuntime().start` returns. Bad options, a bad input or a taken run id
 * reject before anything is written.
 *
 * @example
 * ```ts
 * const run = await startWorkflowRun(triage, { input: { ticket: 'T-1' }, host })
 * const result = await run.done
 * ```
 */
export async function startWorkflowRun<TInput>(workflow: WorkflowDefinition<TInput> | WorkflowFunction, options: RunOptions = {}): Promise<RunHandle> {
  return runtimeFor(options).start(toWorkflowDefinition(workflow), runOptionsOf(options))
}

/**
 * Runs a workflow to its end and returns its disposition and result. A root
 * value that fails the outcome classifier, a group failure that escapes, a
 * thrown error or a value that cannot be detached make the run `failed`; host
 * cancellation makes it `cancelled`. The return value, `result.json`, the
 * `run_end` line and `outputs/README.md` always agree.
 *
 * @example
 * ```ts
 * const run = await runWorkflowScript(triage, { input: { ticket: 'T-1' }, host: createScriptedHost({ rules }) })
 * if (!run.ok) console.error(run.disposition, run.error?.message)
 * ```
 */
export async function runWorkflowScript<TInput>(workflow: WorkflowDefinition<TInput> | WorkflowFunction, options: RunOptions = {}): Promise<RunResult> {
  return (await startWorkflowRun(workflow, options)).done
}

/**
 * Resumes a run: `createRuntime().resume` with this workflow. A new
 * `resume-NNN` execution (allocated by the store) replays the recorded prefix
 * (no host calls while keys match) and continues live where the run stopped:
 * after a crash, a cancellation, or a call that failed (recorded failures run
 * again). The first call whose request differs trips the one-way divergence
 * latch: it and every later call run live, and a `replay_diverged` line says
 * where and why. The run's recorded budgets and settings apply under the
 * options given here.
 *
 * The resume claims the run in its store (the file store's `owner.lock`,
 * PostgreSQL's lease, memory's in-process set) before its execution exists,
 * and holds it until it ends. While a live owner holds it, this rejects with
 * `RunOwnedError` (code `RUN_OWNED`) and writes nothing; a dead holder is
 * taken over. Unlike `createRuntime().resume`, a completed run is resumed
 * again (every call answered from the journal) unless `refuseCompleted` is set.
 */
export async function resumeRun<TInput>(runId: string, workflow: WorkflowDefinition<TInput> | WorkflowFunction, options: RunOptions = {}): Promise<ResumeResult> {
  let resumedFrom: string | undefined
  const handle = await runtimeFor(options).resume(runId, {
    ...runOptionsOf(options),
    workflow: toWorkflowDefinition(workflow),
    refuseCompleted: options.refuseCompleted ?? false,
    onEvent: (line) => {
      // The execution it continues, as its own run_start records it (decided under the claim).
      if (line.type === 'run_start' && resumedFrom === undefined) resumedFrom = line.resumeOf
      options.onEvent?.(line)
    },
  })
  return resumeResultOf(await handle.done, resumedFrom ?? runId)
}

/**
 * Re-runs a finished run entirely from its recording, with no host: the
 * determinism check (`createRuntime().replay` with this workflow). Every
 * recorded call, failed ones included, answers from the recording while its
 * key matches; a call that diverges or was never recorded fails as
 * `sdk-unavailable` because there is no host to ask. The result reports per
 * call (matched, diverged, missing, extra) instead of throwing. A replay
 * writes only its own `replay-NNN` execution and claims nothing.
 */
export async function replayRun<TInput>(runId: string, workflow: WorkflowDefinition<TInput> | WorkflowFunction, options: Omit<RunOptions, 'host'> = {}): Promise<ReplayRunResult> {
  const { host: _host, ...withoutHost } = runOptionsOf(options)
  const handle = await runtimeFor(options).replay(runId, { ...withoutHost, workflow: toWorkflowDefinition(workflow) })
  return replayResultOf(await handle.done)
}
