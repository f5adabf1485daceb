import { type Attributes, type Context, type Span, SpanStatusCode, type Tracer, context as otelContext, trace } from '@opentelemetry/api'
import type { AgentEndLine, AgentStartLine, ChildStartLine, ErrorLine, JournalLine, LlmAttemptLine, ToolEndLine, ToolStartLine } from '@locus/journal'

/** The version of the (still developing) GenAI semantic conventions these spans follow. */
export const GEN_AI_SEMCONV_VERSION = '1.41.0'

/** Options of {@link createJournalTracer}. */
export interface JournalTracerOptions {
  /** Where spans go: `trace.getTracer('locus')` or a provider's tracer. */
  readonly tracer: Tracer
  /**
   * Put prompts and tool arguments on spans (`gen_ai.input.messages`,
   * `gen_ai.tool.call.arguments`). Off by default: traces often leave the
   * trust boundary the journal lives in.
   * @default false
   */
  readonly captureContent?: boolean | undefined
  /** The parent of the run's span, e.g. the server request that started it. */
  readonly parentContext?: Context | undefined
}

/** Turns the journal lines of one execution into spans as they are applied. */
export interface JournalTracer {
  /** Applies one line, in `seq` order. */
  apply(line: JournalLine): void
  /** Ends every span still open (at the last line's time), as `run_end` does. Idempotent. */
  close(): void
}

interface PendingAttempt {
  readonly start: AgentStartLine
  span: Span | undefined
  /** Its LLM requests (`llm_attempt` lines), made into `chat` spans when the attempt ends. */
  readonly llm: LlmAttemptLine[]
}

interface LogicalCall {
  readonly span: Span
  lastEnd: number
  ended: boolean
}

interface PendingTool {
  readonly start: ToolStartLine
  span: Span | undefined
  /** A deferred tool's span, ended when its wait opened; the resolution span links to it. */
  waited?: { readonly span: Span; readonly deferredId: string }
  parent?: Context
}

const at = (line: JournalLine): number => Date.parse(line.ts)

/**
 * Journal lines to OpenTelemetry spans, with the GenAI conventions
 * ({@link GEN_AI_SEMCONV_VERSION}):
 *
 * - the run is `invoke_workflow <workflow>`, ending with the run's
 *   disposition (status error unless it completed) and answer outcome;
 * - each `parallel()`/`pipeline()` group is a span with its counts;
 * - a logical `agent()` call is `invoke_agent <agent>` with one child span
 *   per physical attempt (`locus.attempt`, `locus.failure_cause`, status
 *   error when it failed or threw, token usage when known);
 * - each LLM request attempt (`llm_attempt`) is `chat <model>` under its
 *   agent attempt, with `gen_ai.request.model` and, when known, token usage;
 * - each tool attempt is `execute_tool <tool>`, under the agent attempt that
 *   made it when a child agent called it; a deferred tool's span ends when
 *   the wait opens, and its answer is `resolve_deferred <tool>`, linked to it;
 * - each `spawn()` attempt is `invoke_workflow <child>` with the child's
 *   execution id (the child's own lines are in its own journal: trace them
 *   with a tracer of their own);
 * - a call answered from a recording makes no new span: an event
 *   `locus.replayed` on its parent says it was served.
 *
 * Span times are the journal's `ts`, so a stored journal can be turned into
 * the same trace later.
 */
export function createJournalTracer(options: JournalTracerOptions): JournalTracer {
  const { tracer } = options
  const captureContent = options.captureContent === true
  let runSpan: Span | undefined
  let runContext: Context = options.parentContext ?? otelContext.active()
  let lastTime = 0
  const groups = new Map<string, { span: Span; context: Context }>()
  const attempts = new Map<string, PendingAttempt>()
  const logical = new Map<string, LogicalCall>()
  const tools = new Map<string, PendingTool>()
  /** Tool retries not yet on a span, by the key of the attempt they lead to. */
  const toolRetries = new Map<string, { readonly attributes: Attributes; readonly time: number }>()
  /** Spawn attempts whose child has not ended, by `childCallId#attempt`. */
  const children = new Map<string, { readonly start: ChildStartLine; readonly span: Span }>()
  /** Open deferrals: the key of the tool attempt that waits. */
  const deferrals = new Map<string, string>()
  let closed = false

  function parentOf(groupId: string | undefined): { span: Span | undefined; context: Context } {
    const group = groupId === undefined ? undefined : groups.get(groupId)
    return group ?? { span: runSpan, context: runContext }
  }

  function logicalSpan(start: AgentStartLine): LogicalCall {
    let call = logical.get(start.logicalCallId)
    if (call === undefined) {
      const parent = parentOf(start.groupId)
      const attributes: Attributes = {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': start.agent,
        'locus.logical_call_id': start.logicalCallId,
        'locus.attempts': start.attempts,
      }
      attributes['locus.ordinal'] = start.ordinal
      if (start.label !== undefined) attributes['locus.label'] = start.label
      call = { span: tracer.startSpan(`invoke_agent ${start.agent}`, { startTime: at(start), attributes }, parent.context), lastEnd: at(start), ended: false }
      logical.set(start.logicalCallId, call)
    }
    return call
  }

  function attemptSpan(callId: string): Span | undefined {
    const pending = attempts.get(callId)
    if (pending === undefined) return undefined
    if (pending.span !== undefined) return pending.span
    const { start } = pending
    const call = logicalSpan(start)
    const attributes: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': start.agent,
      'locus.call_id': start.callId,
      'locus.attempt': start.attempt,
      'locus.attempts': start.attempts,
    }
    if (captureContent) attributes['gen_ai.input.messages'] = JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: start.prompt }] }])
    pending.span = tracer.startSpan(`invoke_agent ${start.agent} attempt ${start.attempt}`, { startTime: at(start), attributes }, trace.setSpan(otelContext.active(), call.span))
    return pending.span
  }

  function endAttempt(line: AgentEndLine | ErrorLine, callId: string): void {
    const span = attemptSpan(callId)
    const pending = attempts.get(callId)
    if (span === undefined || pending === undefined) return
    const call = logical.get(pending.start.logicalCallId)
    if (line.type === 'agent_end') {
      span.setAttribute('locus.status', line.status)
      if (line.usage !== undefined) {
        span.setAttribute('gen_ai.usage.input_tokens', line.usage.inputTokens)
        span.setAttribute('gen_ai.usage.output_tokens', line.usage.outputTokens)
      }
      if (line.cost !== undefined) span.setAttributes({ 'locus.cost.usd': Number(line.cost.usd), 'locus.cost.table': line.cost.table })
      if (line.status === 'failed') {
        span.setAttribute('locus.failure_cause', line.failureCause ?? 'unclassified')
        span.setAttribute('error.type', line.failureCause ?? 'unclassified')
        span.setStatus({ code: SpanStatusCode.ERROR, message: line.reason ?? line.failureCause ?? 'failed' })
      }
    } else {
      span.setAttribute('locus.status', 'threw')
      if (line.failureCause !== undefined) span.setAttribute('locus.failure_cause', line.failureCause)
      span.setAttribute('error.type', line.failureCause ?? line.error.code)
      span.setStatus({ code: SpanStatusCode.ERROR, message: line.message })
    }
    chatSpans(pending, span, line.type === 'agent_end' ? line.usage : undefined)
    span.end(at(line))
    attempts.delete(callId)
    if (call !== undefined) {
      call.lastEnd = at(line)
      if (line.type === 'agent_end' && line.status === 'completed') {
        call.span.setAttribute('locus.attempts_made', pending.start.attempt)
        call.span.end(at(line))
        call.ended = true
        // Nothing refers to a completed call again; a long run keeps no span of it.
        logical.delete(pending.start.logicalCallId)
      }
    }
  }

  /**
   * One `chat` span per LLM request attempt of an agent attempt. The journal
   * keeps each request's duration, not its start, so the spans are laid end
   * to end from the attempt's start (with the backoff between them). Each
   * request carries the token usage the host reported for it (`usage` on its
   * `llm_attempt`); a line without it gets the turn's usage only when it was
   * the attempt's one successful request, else that stays on the attempt's span.
   */
  function chatSpans(pending: PendingAttempt, parent: Span, usage: { inputTokens: number; outputTokens: number } | undefined): void {
    const parentContext = trace.setSpan(otelContext.active(), parent)
    const succeeded = pending.llm.filter((line) => line.outcome === 'succeeded').length
    let cursor = at(pending.start)
    for (const line of pending.llm) {
      const attributes: Attributes = {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': line.model,
        'locus.turn': line.turn,
        'locus.step': line.step,
        'locus.llm_attempt': line.llmAttempt,
        'locus.llm_attempts': line.llmMaxAttempts,
        'locus.outcome': line.outcome,
        'locus.streamed': line.streamed,
      }
      if (line.status !== undefined) attributes['http.response.status_code'] = line.status
      if (line.timeToFirstTokenMs !== undefined) attributes['locus.time_to_first_token_ms'] = line.timeToFirstTokenMs
      // The request's own usage when the host reported it; else the turn's, when this was its one answer.
      const requestUsage = line.usage ?? (usage !== undefined && succeeded === 1 && line.outcome === 'succeeded' ? usage : undefined)
      if (requestUsage !== undefined) {
        attributes['gen_ai.usage.input_tokens'] = requestUsage.inputTokens
        attributes['gen_ai.usage.output_tokens'] = requestUsage.outputTokens
      }
      // Dollars as a number for dashboards; the journal keeps the exact decimal string.
      if (line.cost !== undefined) {
        if ('usd' in line.cost) attributes['locus.cost.usd'] = Number(line.cost.usd)
        else attributes['locus.cost.unpriced'] = true
        attributes['locus.cost.table'] = line.cost.table
      }
      const span = tracer.startSpan(`chat ${line.model}`, { startTime: cursor, attributes }, parentContext)
      if (line.outcome !== 'succeeded') {
        span.setAttribute('error.type', line.code ?? line.outcome)
        span.setStatus({ code: SpanStatusCode.ERROR, message: line.error ?? line.outcome })
      }
      cursor += line.durationMs
      span.end(cursor)
      cursor += line.delayBeforeNextMs ?? 0
    }
    pending.llm.length = 0
  }

  function toolSpan(key: string, time?: number): Span | undefined {
    const pending = tools.get(key)
    if (pending === undefined) return undefined
    if (pending.span !== undefined) return pending.span
    const { start } = pending
    if (pending.waited !== undefined) {
      // The answer to a deferral: a span of its own from when it came, linked to the span that opened the wait.
      pending.span = tracer.startSpan(
        `resolve_deferred ${start.tool}`,
        {
          startTime: time ?? lastTime,
          links: [{ context: pending.waited.span.spanContext() }],
          attributes: { 'gen_ai.tool.name': start.tool, 'gen_ai.tool.call.id': start.toolCallId, 'locus.deferred_id': pending.waited.deferredId, 'locus.attempt': start.attempt },
        },
        pending.parent ?? parentOf(start.groupId).context,
      )
      return pending.span
    }
    const parentAttempt = start.parentCallId === undefined ? undefined : attemptSpan(start.parentCallId)
    const parentContext = parentAttempt === undefined ? parentOf(start.groupId).context : trace.setSpan(otelContext.active(), parentAttempt)
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': start.tool,
      'gen_ai.tool.call.id': start.toolCallId,
      'locus.attempt': start.attempt,
      'locus.attempts': start.maxAttempts,
    }
    if (captureContent && start.args !== undefined) attributes['gen_ai.tool.call.arguments'] = JSON.stringify(start.args)
    pending.span = tracer.startSpan(`execute_tool ${start.tool}`, { startTime: at(start), attributes }, parentContext)
    pending.parent = parentContext
    // The retry that led to this attempt, on the attempt's own span: the failed one had ended before the retry line came.
    const retried = toolRetries.get(key)
    if (retried !== undefined) {
      toolRetries.delete(key)
      pending.span.addEvent('locus.retry', retried.attributes, retried.time)
    }
    return pending.span
  }

  function endTool(line: ToolEndLine): void {
    const key = `${line.toolCallId}#${line.attempt}`
    const span = toolSpan(key, at(line))
    if (span === undefined) return
    span.setAttribute('locus.status', line.status)
    if (line.status !== 'completed') {
      span.setAttribute('error.type', line.failure?.code ?? line.status)
      span.setStatus({ code: SpanStatusCode.ERROR, message: line.failure?.error ?? line.status })
    }
    span.end(at(line))
    tools.delete(key)
  }

  function replayedEvent(groupId: string | undefined, attributes: Attributes, time: number): void {
    parentOf(groupId).span?.addEvent('locus.replayed', attributes, time)
  }

  function close(): void {
    if (closed) return
    closed = true
    for (const pending of tools.values()) {
      if (pending.span === undefined) continue
      pending.span.setStatus({ code: SpanStatusCode.ERROR, message: 'no terminal record: the journal ends while this attempt was running' })
      pending.span.end(lastTime)
    }
    for (const [callId, pending] of attempts) {
      const span = attemptSpan(callId)
      if (span !== undefined) chatSpans(pending, span, undefined)
      span?.setStatus({ code: SpanStatusCode.ERROR, message: 'no terminal record: the journal ends while this attempt was running' })
      span?.end(lastTime)
      const call = logical.get(pending.start.logicalCallId)
      if (call !== undefined) call.lastEnd = lastTime
    }
    for (const call of logical.values()) {
      if (call.ended) continue
      // A call that never completed: its last attempt failed, threw or never ended.
      call.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the call did not complete' })
      call.span.end(call.lastEnd)
    }
    for (const child of children.values()) {
      child.span.setStatus({ code: SpanStatusCode.ERROR, message: 'no terminal record: the journal ends while this child was running' })
      child.span.end(lastTime)
    }
    for (const group of groups.values()) group.span.end(lastTime)
    runSpan?.end(lastTime)
  }

  function apply(line: JournalLine): void {
    if (closed) return
    lastTime = Math.max(lastTime, at(line))
    switch (line.type) {
      case 'run_start': {
        runSpan = tracer.startSpan(
          `invoke_workflow ${line.workflow}`,
          {
            startTime: at(line),
            attributes: {
              'gen_ai.operation.name': 'invoke_workflow',
              'locus.workflow': line.workflow,
              'locus.run_id': line.runId,
              'locus.execution_id': line.executionId,
              'locus.semconv_version': GEN_AI_SEMCONV_VERSION,
            },
          },
          runContext,
        )
        runContext = trace.setSpan(runContext, runSpan)
        return
      }
      case 'group_start': {
        const parent = parentOf(line.parentGroupId)
        const attributes: Attributes = { 'locus.group_id': line.groupId, 'locus.group_kind': line.groupKind, 'locus.total': line.total }
        if (line.label !== undefined) attributes['locus.label'] = line.label
        const span = tracer.startSpan(`${line.groupKind} ${line.label ?? line.groupId}`, { startTime: at(line), attributes }, parent.context)
        groups.set(line.groupId, { span, context: trace.setSpan(parent.context, span) })
        return
      }
      case 'group_end': {
        const group = groups.get(line.groupId)
        if (group === undefined) return
        group.span.setAttributes({ 'locus.outcome': line.outcome, 'locus.completed': line.completed, 'locus.failed': line.failed, 'locus.not_dispatched': line.notDispatched })
        if (line.outcome !== 'completed') group.span.setStatus({ code: SpanStatusCode.ERROR, message: `${line.outcome}: ${line.failed} failed, ${line.notDispatched} not dispatched` })
        group.span.end(at(line))
        groups.delete(line.groupId)
        return
      }
      case 'agent_start':
        attempts.set(line.callId, { start: line, span: undefined, llm: [] })
        return
      case 'child_start': {
        const attributes: Attributes = {
          'gen_ai.operation.name': 'invoke_workflow',
          'locus.workflow': line.workflow,
          'locus.child_call_id': line.childCallId,
          'locus.child_execution_id': line.childExecutionId,
          'locus.attempt': line.attempt,
          'locus.attempts': line.maxAttempts,
        }
        if (line.label !== undefined) attributes['locus.label'] = line.label
        if (captureContent && line.input !== undefined) attributes['locus.child_input'] = JSON.stringify(line.input)
        const span = tracer.startSpan(`invoke_workflow ${line.workflow}`, { startTime: at(line), attributes }, parentOf(line.groupId).context)
        children.set(`${line.childCallId}#${line.attempt}`, { start: line, span })
        return
      }
      case 'child_end': {
        const key = `${line.childCallId}#${line.attempt}`
        const child = children.get(key)
        if (child === undefined) {
          if (line.replayed === true) replayedEvent(line.groupId, { 'locus.workflow': line.workflow, 'locus.child_call_id': line.childCallId, 'locus.status': line.status }, at(line))
          return
        }
        child.span.setAttribute('locus.status', line.status)
        if (line.disposition !== undefined) child.span.setAttribute('locus.disposition', line.disposition)
        if (line.status !== 'completed') {
          child.span.setAttribute('error.type', line.failure?.code ?? line.status)
          child.span.setStatus({ code: SpanStatusCode.ERROR, message: line.failure?.error ?? line.status })
        }
        child.span.end(at(line))
        children.delete(key)
        return
      }
      case 'llm_attempt':
        attempts.get(line.callId)?.llm.push(line)
        return
      case 'deferred_open': {
        const key = `${line.toolCallId}#${line.attempt}`
        const span = toolSpan(key)
        const pending = tools.get(key)
        if (span === undefined || pending === undefined) return
        // A wait may last days: the tool's span ends when the wait opens, and the answer gets a linked span.
        span.setAttributes({ 'locus.deferred_id': line.deferredId, 'locus.status': 'waiting' })
        if (captureContent && line.args !== undefined) span.setAttribute('gen_ai.tool.call.arguments', JSON.stringify(line.args))
        span.end(at(line))
        pending.span = undefined
        pending.waited = { span, deferredId: line.deferredId }
        deferrals.set(line.deferredId, key)
        return
      }
      case 'deferred_settled': {
        const key = deferrals.get(line.deferredId)
        if (key === undefined) return
        toolSpan(key, at(line))?.setAttribute('locus.deferred_outcome', line.outcome)
        deferrals.delete(line.deferredId)
        return
      }
      case 'agent_end': {
        const pending = attempts.get(line.callId)
        if (line.replayed === true && pending?.span === undefined) {
          attempts.delete(line.callId)
          replayedEvent(line.groupId, { 'gen_ai.agent.name': line.agent, 'locus.call_id': line.callId, 'locus.logical_call_id': line.logicalCallId, 'locus.status': line.status }, at(line))
          return
        }
        endAttempt(line, line.callId)
        return
      }
      case 'error':
        if (line.callId !== undefined && attempts.has(line.callId)) endAttempt(line, line.callId)
        return
      case 'retry': {
        if (line.kind === 'tool' && line.callId !== undefined) {
          const attributes: Attributes = { 'locus.cause': line.cause, 'locus.from_attempt': line.fromAttempt, 'locus.to_attempt': line.toAttempt }
          if (line.delayMs !== undefined) attributes['locus.delay_ms'] = line.delayMs
          toolRetries.set(`${line.callId}#${line.toAttempt}`, { attributes, time: at(line) })
          return
        }
        const call = line.logicalCallId === undefined ? undefined : logical.get(line.logicalCallId)
        call?.span.addEvent('locus.retry', { 'locus.cause': line.cause, ...(line.delayMs === undefined ? {} : { 'locus.delay_ms': line.delayMs }) }, at(line))
        return
      }
      case 'tool_start':
        tools.set(`${line.toolCallId}#${line.attempt}`, { start: line, span: undefined })
        return
      case 'tool_end': {
        const key = `${line.toolCallId}#${line.attempt}`
        if (line.replayed === true && tools.get(key)?.span === undefined) {
          tools.delete(key)
          replayedEvent(line.groupId, { 'gen_ai.tool.name': line.tool, 'gen_ai.tool.call.id': line.toolCallId, 'locus.status': line.status }, at(line))
          return
        }
        endTool(line)
        return
      }
      case 'run_end': {
        if (runSpan !== undefined) {
          runSpan.setAttribute('locus.disposition', line.disposition)
          if (line.answerOutcome !== undefined) runSpan.setAttribute('locus.answer_outcome', line.answerOutcome)
          if (line.disposition !== 'completed') runSpan.setStatus({ code: SpanStatusCode.ERROR, message: line.error?.message ?? line.disposition })
        }
        close()
        return
      }
      default:
        return
    }
  }

  return { apply, close }
}
