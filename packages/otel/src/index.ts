export { GEN_AI_SEMCONV_VERSION, createJournalTracer } from './journal-tracer.js'
export type { JournalTracer, JournalTracerOptions } from './journal-tracer.js'
