import type { JournalLine } from '@locus/journal'
import { createJournalTracer } from '@locus/otel'
import type { RunHandle, Runtime } from '@locus/runtime'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { type Resource, defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { CliError } from './cli-error.js'

/** Where OTLP/HTTP goes when the environment names no endpoint: a collector on this machine. */
export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318'

/** `--otel`: spans of the runs of this process, exported over OTLP/HTTP. */
export interface OtelExport {
  /** Where the spans go. */
  readonly url: string
  /** A line sink for one execution: give it every journal line (`onEvent`), in order. */
  tracerForExecution(): (line: JournalLine) => void
  /** The same runtime, with every execution it starts or resumes traced. */
  traceRuntime(runtime: Runtime): Runtime
  /** Exports what is left and stops; call it before the process exits. */
  shutdown(): Promise<void>
}

/**
 * The traces URL from the standard variables: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
 * as is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces`, else a local collector.
 */
export function otlpTracesUrl(env: Readonly<Record<string, string | undefined>>): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  const url = traces !== undefined && traces !== '' ? traces : `${(base !== undefined && base !== '' ? base : DEFAULT_OTLP_ENDPOINT).replace(/\/+$/, '')}/v1/traces`
  try {
    new URL(url)
  } catch {
    throw new CliError('CLI_USAGE', `--otel: the OTLP endpoint ${JSON.stringify(url)} is not a URL; set OTEL_EXPORTER_OTLP_ENDPOINT to e.g. http://localhost:4318.`)
  }
  return url
}

/** How long one export may take: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or `OTEL_EXPORTER_OTLP_TIMEOUT` (ms), else 5 s, so a dead collector delays the exit by that much at most. */
function timeoutOf(env: Readonly<Record<string, string | undefined>>): number {
  const value = Number(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? env.OTEL_EXPORTER_OTLP_TIMEOUT)
  return Number.isFinite(value) && value > 0 ? value : 5_000
}

/** Parses `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,key=value`, values URL-encoded). */
function headersOf(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const pair of (env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS ?? '').split(',')) {
    const equals = pair.indexOf('=')
    if (equals <= 0) continue
    headers[decodeURIComponent(pair.slice(0, equals).trim())] = decodeURIComponent(pair.slice(equals + 1).trim())
  }
  return headers
}

/** The service name spans carry when the environment names none. */
export const DEFAULT_SERVICE_NAME = 'locus'

/**
 * The resource every span of this process carries, from the standard
 * variables: `OTEL_RESOURCE_ATTRIBUTES` (`key=value,key=value`, values
 * URL-encoded), then `OTEL_SERVICE_NAME`, which wins for `service.name`, as
 * the OpenTelemetry specification says; `locus` when neither names a service.
 */
export function otelResource(env: Readonly<Record<string, string | undefined>>): Resource {
  const attributes: Record<string, string> = {}
  for (const pair of (env.OTEL_RESOURCE_ATTRIBUTES ?? '').split(',')) {
    const equals = pair.indexOf('=')
    if (equals <= 0) continue
    try {
      attributes[decodeURIComponent(pair.slice(0, equals).trim())] = decodeURIComponent(pair.slice(equals + 1).trim())
    } catch {
      // The specification says to drop a pair that does not decode, not the whole variable.
    }
  }
  const serviceName = env.OTEL_SERVICE_NAME?.trim()
  if (serviceName !== undefined && serviceName !== '') attributes['service.name'] = serviceName
  attributes['service.name'] ??= DEFAULT_SERVICE_NAME
  return defaultResource().merge(resourceFromAttributes(attributes))
}

/**
 * Starts exporting traces over OTLP/HTTP (JSON) to the endpoint the
 * environment names. How journal lines become spans is `@locus/otel`'s;
 * this file only wires a provider and an exporter to it.
 */
export function startOtelExport(env: Readonly<Record<string, string | undefined>>): OtelExport {
  const url = otlpTracesUrl(env)
  const provider = new BasicTracerProvider({ resource: otelResource(env), spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url, headers: headersOf(env), timeoutMillis: timeoutOf(env) }))] })
  const tracer = provider.getTracer('locus')
  const tracerForExecution = (): ((line: JournalLine) => void) => {
    const journal = createJournalTracer({ tracer })
    return (line) => {
      journal.apply(line)
    }
  }
  const traced = (handle: RunHandle): RunHandle => {
    handle.subscribe(tracerForExecution())
    return handle
  }
  return {
    url,
    tracerForExecution,
    traceRuntime: (runtime) => ({
      ...runtime,
      start: async (workflow, options) => traced(await runtime.start(workflow, options)),
      resume: async (runId, options) => traced(await runtime.resume(runId, options)),
    }),
    async shutdown() {
      await provider.forceFlush()
      await provider.shutdown()
    },
  }
}
