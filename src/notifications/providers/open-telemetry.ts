/**
 * The `open_telemetry_tracing` notification service: when a build finishes (or is skipped), one
 * OTLP/HTTP export of its trace to the service's `endpoint` (a base URL: `/v1/traces` is
 * appended, as the public documentation says), with the service's `headers`.
 *
 * The trace follows the documented structure (OpenTelemetry page of the pipelines
 * integrations): `buildkite.build` > `buildkite.build.stage` > (`buildkite.step.group` >)
 * `buildkite.step` > `buildkite.job`, with the documented resource and span attributes that a
 * build's REST representation carries. A build finished here has one stage (the REST
 * representation keeps no history of a build resumed after it finished).
 *
 * Ids are derived from the build's and jobs' ids (SHA-256), so a redelivery exports the same
 * trace and span ids and a receiver can drop the duplicate. Every delivery builds its own tracer
 * provider (no global is registered), ends every span with explicit times, exports them in one
 * request, then flushes and shuts the provider and the exporter down.
 *
 * The export is the SDK's (`@opentelemetry/otlp-exporter-base`, binary protobuf by default as the
 * documentation says the real service sends), configured here from the service's settings only
 * (the stock `OTLPTraceExporter` merges the process's `OTEL_EXPORTER_OTLP_*` variables into every
 * export, which would send this server's own collector headers to every organization's
 * endpoint), and its bytes go out through the server's one transport (`send`, the SSRF-safe
 * src/security/outbound.ts in production), never the SDK's own Node http client: that client
 * reached loopback and metadata addresses given as IP literals, and had only an idle timeout.
 */
import crypto from 'node:crypto';
import { createNoopMeter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type MeterProvider, type Span } from '@opentelemetry/api';
import { ExportResultCode, TraceState, type ExportResult } from '@opentelemetry/core';
import {
  createOtlpNetworkExportDelegate,
  ExporterMetrics,
  OTLPExporterBase,
  OTLPExporterError,
  type ExportResponse,
  type IExporterTransport,
} from '@opentelemetry/otlp-exporter-base';
import { JsonTraceSerializer, ProtobufTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SamplingDecision,
  SimpleSpanProcessor,
  type IdGenerator,
  type ReadableSpan,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { OPEN_TELEMETRY_EVENTS, type AttemptResult, type HttpSend, type NotificationEvent, type Representation } from '../events';
import { UNSUCCESSFUL_BUILD_STATES, UNSUCCESSFUL_JOB_STATES } from '../../builds/states';
import { isRecord, isStringArray } from '../../core/guards';

/** The service's settings, as the notification services API documents them (map values are strings). */
export interface OpenTelemetrySettings {
  /** The base URL of the OTLP endpoint, without `/v1/traces`. */
  endpoint: string;
  /** The resource's `service.name`; `buildkite` when unset. */
  service_name?: string | null;
  /** Extra HTTP headers of every export (API keys, `Authorization`). Secret: never logged. */
  headers?: Record<string, string> | null;
  /** Extra resource attributes. */
  resource_attributes?: Record<string, string> | null;
  /** A W3C `tracestate` value given to every span (`vendor=value,other=value`). */
  tracestate?: string | null;
}

export interface OpenTelemetryOptions {
  /** The wire encoding: `protobuf` (the default, as the real service) or `json`. */
  encoding?: 'protobuf' | 'json';
  /** The whole export's deadline, retries of 429/502/503/504 included. Default 10 s. */
  timeoutMillis?: number;
  /** The transport of the export's one request (address checks, deadline, no redirects). */
  send: HttpSend;
}

export { OPEN_TELEMETRY_EVENTS };

export const DEFAULT_SERVICE_NAME = 'buildkite';
const DEFAULT_TIMEOUT_MS = 10_000;

/** The URL an export is posted to: the endpoint with `/v1/traces` appended; null if it is no http(s) URL. */
export function tracesUrl(endpoint: string): string | null {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return null;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) return null;
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  url.hash = '';
  return url.toString();
}

/** The URLs a delivery of this service contacts, for the caller's address checks. */
export function openTelemetryTargets(settings: Pick<OpenTelemetrySettings, 'endpoint'>): string[] {
  const url = tracesUrl(settings.endpoint);
  return url ? [url] : [];
}

// --- ids ------------------------------------------------------------------------------------

function digestHex(input: string, bytes: number): string {
  const hex = crypto
    .createHash('sha256')
    .update(input)
    .digest('hex')
    .slice(0, bytes * 2);
  // An all-zero id is invalid in OpenTelemetry; one in 2^64 digests, but never send it.
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}

/** The trace id of a build's trace: the same for every export of the build. */
export function traceIdFor(buildId: string): string {
  return digestHex(`windsock:trace:${buildId}`, 16);
}

/** The span id of one span of a build's trace (kind: build, stage, group, step, job). */
export function spanIdFor(buildId: string, kind: string, key: string): string {
  return digestHex(`windsock:span:${buildId}:${kind}:${key}`, 8);
}

/** Hands the tracer the id the next span is to have: spans are started one at a time below. */
class DerivedIds implements IdGenerator {
  constructor(
    readonly traceId: string,
    public nextSpanId = '',
  ) {}
  generateTraceId(): string {
    return this.traceId;
  }
  generateSpanId(): string {
    return this.nextSpanId;
  }
}

// --- reading the representations --------------------------------------------------------------

const rec = (v: unknown): Representation | null => (isRecord(v) ? v : null);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const bool = (v: unknown): boolean | undefined => (typeof v === 'boolean' ? v : undefined);
const strings = (v: unknown): string[] | undefined => (isStringArray(v) && v.length > 0 ? v : undefined);
const time = (v: unknown): Date | undefined => {
  if (typeof v !== 'string') return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
};

function put(a: Attributes, key: string, value: string | number | boolean | string[] | undefined): void {
  if (value !== undefined) a[key] = value;
}

function queueOf(rules: string[] | undefined): string | undefined {
  const rule = rules?.find((r) => r.startsWith('queue='));
  return rule ? rule.slice('queue='.length) : undefined;
}

function buildAttributes(b: Representation): Attributes {
  const a: Attributes = {};
  put(a, 'buildkite.build.number', num(b.number));
  put(a, 'buildkite.build.commit', str(b.commit));
  put(a, 'buildkite.build.message', str(b.message));
  put(a, 'buildkite.build.branch', str(b.branch));
  put(a, 'buildkite.build.source', str(b.source));
  put(a, 'buildkite.build.graphql_id', str(b.graphql_id));
  put(a, 'buildkite.build.web_url', str(b.web_url));
  const creator = rec(b.creator);
  if (creator) {
    put(a, 'buildkite.build.creator.id', str(creator.id));
    put(a, 'buildkite.build.creator.email', str(creator.email));
    put(a, 'buildkite.build.creator.name', str(creator.name));
    put(a, 'buildkite.build.creator.graphql_id', str(creator.graphql_id));
  }
  return a;
}

function resourceAttributes(event: NotificationEvent, b: Representation, settings: OpenTelemetrySettings): Attributes {
  const a: Attributes = { ...(settings.resource_attributes ?? {}) };
  a[ATTR_SERVICE_NAME] = str(settings.service_name) ?? DEFAULT_SERVICE_NAME;
  const org = rec(event.payload.organization);
  const orgSlugFromUrl = /\/organizations\/([^/]+)\//.exec(str(b.url) ?? '')?.[1];
  put(a, 'buildkite.organization.slug', str(org?.slug) ?? orgSlugFromUrl);
  put(a, 'buildkite.organization.name', str(org?.name));
  put(a, 'buildkite.organization.id', str(org?.id) ?? event.organizationId);
  const p = rec(event.payload.pipeline) ?? rec(b.pipeline);
  if (p) {
    put(a, 'buildkite.pipeline.slug', str(p.slug));
    put(a, 'buildkite.pipeline.name', str(p.name));
    put(a, 'buildkite.pipeline.id', str(p.id));
    put(a, 'buildkite.pipeline.repo', str(p.repository));
    put(a, 'buildkite.pipeline.graphql_id', str(p.graphql_id));
    put(a, 'buildkite.pipeline.web_url', str(p.web_url));
    put(a, 'buildkite.cluster.id', str(p.cluster_id));
  }
  return a;
}

/** A job's span window: script and trigger jobs from start to finish, a block from runnable to unblocked. */
function jobWindow(j: Representation): { start: Date; end: Date } | null {
  const started = time(j.started_at);
  const finished = time(j.finished_at);
  if (started && finished) return { start: started, end: finished < started ? started : finished };
  if (j.type === 'manual') {
    const from = time(j.runnable_at) ?? time(j.created_at);
    const unblocked = time(j.unblocked_at);
    if (from && unblocked) return { start: from, end: unblocked < from ? from : unblocked };
  }
  return null;
}

const STEP_TYPES: Record<string, string> = { script: 'command', manual: 'block', trigger: 'trigger', waiter: 'wait' };

function jobAttributes(j: Representation, window: { start: Date }): Attributes {
  const a: Attributes = { 'buildkite.build.stage': 1 };
  const label = str(j.label) ?? str(j.name);
  const step = rec(j.step);
  put(a, 'buildkite.step.id', str(step?.id));
  put(a, 'buildkite.step.key', str(j.step_key));
  put(a, 'buildkite.step.command', str(j.command));
  put(a, 'buildkite.step.label', label);
  put(a, 'buildkite.job.id', str(j.id));
  put(a, 'buildkite.job.graphql_id', str(j.graphql_id));
  put(a, 'buildkite.job.type', str(j.type));
  put(a, 'buildkite.job.label', label);
  put(a, 'buildkite.job.command', str(j.command));
  put(a, 'buildkite.job.agent_query_rules', strings(j.agent_query_rules));
  put(a, 'buildkite.job.exit_status', num(j.exit_status));
  put(a, 'buildkite.job.passed', str(j.state) ? j.state === 'passed' : undefined);
  put(a, 'buildkite.job.soft_failed', bool(j.soft_failed));
  put(a, 'buildkite.job.state', str(j.state));
  put(a, 'buildkite.job.runnable_at', str(j.runnable_at));
  put(a, 'buildkite.job.started_at', str(j.started_at));
  put(a, 'buildkite.job.finished_at', str(j.finished_at));
  const runnable = time(j.runnable_at);
  if (runnable && time(j.started_at)) put(a, 'buildkite.job.wait_time_ms', Math.max(0, window.start.getTime() - runnable.getTime()));
  const unblocker = rec(j.unblocked_by);
  if (unblocker) {
    put(
      a,
      'buildkite.job.unblocked_by',
      JSON.stringify({ uuid: unblocker.id ?? null, graphql_id: unblocker.graphql_id ?? null, name: unblocker.name ?? null }),
    );
  }
  put(a, 'buildkite.job.retried_in_job_id', str(j.retried_in_job_id));
  put(a, 'buildkite.job.signal_reason', str(j.signal_reason));
  const matrix = rec(j.matrix);
  if (matrix) put(a, 'buildkite.job.matrix', JSON.stringify(matrix));
  const agent = rec(j.agent);
  if (agent) {
    const metaData = strings(agent.meta_data);
    put(a, 'buildkite.agent.name', str(agent.name));
    put(a, 'buildkite.agent.id', str(agent.id));
    put(a, 'buildkite.agent.queue', queueOf(metaData) ?? queueOf(strings(j.agent_query_rules)) ?? 'default');
    put(a, 'buildkite.agent.meta_data', metaData);
  }
  return a;
}

const FAILED_JOB_STATES = new Set<string>(UNSUCCESSFUL_JOB_STATES);
const FAILED_BUILD_STATES = new Set<string>(UNSUCCESSFUL_BUILD_STATES);

function setStatus(span: Span, state: string | undefined, ok: boolean, failed: boolean): void {
  if (failed) {
    span.setAttribute('error.type', state ?? 'failed');
    span.setStatus({ code: SpanStatusCode.ERROR, message: state });
  } else if (ok) {
    span.setStatus({ code: SpanStatusCode.OK });
  }
}

// --- the trace --------------------------------------------------------------------------------

interface StepGroup {
  id: string;
  attributes: Attributes;
  jobs: { job: Representation; start: Date; end: Date }[];
  groupKey: string | undefined;
}

/**
 * The spans of a finished build's trace, ended, with their resource: what an export sends. Pure
 * (no network): a tracer provider of its own, an in-memory exporter, shut down before returning.
 */
export async function openTelemetrySpans(event: NotificationEvent, settings: OpenTelemetrySettings): Promise<ReadableSpan[]> {
  const b = rec(event.payload.build);
  const buildId = str(b?.id) ?? event.buildId;
  if (!b || !buildId) return [];
  const ids = new DerivedIds(traceIdFor(buildId));
  const traceState = str(settings.tracestate) ? new TraceState(settings.tracestate!) : undefined;
  const sampler: Sampler = {
    shouldSample: () => ({ decision: SamplingDecision.RECORD_AND_SAMPLED, traceState }),
    toString: () => 'AlwaysOnSampler{tracestate}',
  };
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(resourceAttributes(event, b, settings)),
    idGenerator: ids,
    sampler,
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('windsock.notifications');
  const common = buildAttributes(b);
  const open = (name: string, spanId: string, parent: Span | null, start: Date, attributes: Attributes): Span => {
    ids.nextSpanId = spanId;
    const ctx = parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
    return tracer.startSpan(name, { kind: SpanKind.INTERNAL, startTime: start, attributes: { ...common, ...attributes }, root: !parent }, ctx);
  };

  const state = str(b.state);
  const buildStart = time(b.started_at) ?? time(b.created_at) ?? event.occurredAt;
  let buildEnd = time(b.finished_at) ?? event.occurredAt;
  if (buildEnd < buildStart) buildEnd = buildStart;
  const buildStateAttributes: Attributes = {};
  put(buildStateAttributes, 'buildkite.build.state', state);
  if (b.blocked === true) put(buildStateAttributes, 'buildkite.build.blocked_state', str(b.blocked_state) ?? 'blocked');
  const buildFailed = FAILED_BUILD_STATES.has(state ?? '');

  const root = open('buildkite.build', spanIdFor(buildId, 'build', buildId), null, buildStart, buildStateAttributes);
  const stage = open('buildkite.build.stage', spanIdFor(buildId, 'stage', '1'), root, buildStart, { ...buildStateAttributes, 'buildkite.build.stage': 1 });

  // Jobs that ran, by step (a parallel or matrix step has several), steps by group.
  const steps = new Map<string, StepGroup>();
  const jobs: unknown[] = Array.isArray(b.jobs) ? b.jobs : [];
  for (const raw of jobs) {
    const j = rec(raw);
    const window = j && str(j.id) ? jobWindow(j) : null;
    if (!j || !window) continue;
    const stepId = str(rec(j.step)?.id) ?? str(j.step_key) ?? `job:${String(j.id)}`;
    let step = steps.get(stepId);
    if (!step) {
      const attributes: Attributes = { 'buildkite.build.stage': 1 };
      put(attributes, 'buildkite.step.id', str(rec(j.step)?.id));
      put(attributes, 'buildkite.step.key', str(j.step_key));
      put(attributes, 'buildkite.step.label', str(j.label) ?? str(j.name));
      put(attributes, 'buildkite.step.type', STEP_TYPES[str(j.type) ?? ''] ?? str(j.type));
      put(attributes, 'buildkite.step.command', str(j.command));
      if (j.matrix && rec(j.matrix)) put(attributes, 'buildkite.step.matrix', true);
      const groupKey = str(j.group_key);
      put(attributes, 'buildkite.step.group.key', groupKey);
      step = { id: stepId, attributes, jobs: [], groupKey };
      steps.set(stepId, step);
    }
    step.jobs.push({ job: j, ...window });
  }
  const span = (items: { start: Date; end: Date }[]) => ({
    start: new Date(Math.min(...items.map((i) => i.start.getTime()))),
    end: new Date(Math.max(...items.map((i) => i.end.getTime()))),
  });
  const groups = new Map<string, StepGroup[]>();
  for (const step of steps.values()) {
    const key = step.groupKey ?? '';
    groups.set(key, [...(groups.get(key) ?? []), step]);
  }
  for (const [groupKey, groupSteps] of groups) {
    let parent = stage;
    let groupSpan: Span | null = null;
    if (groupKey) {
      const window = span(groupSteps.flatMap((s) => s.jobs));
      groupSpan = open('buildkite.step.group', spanIdFor(buildId, 'group', groupKey), stage, window.start, {
        'buildkite.build.stage': 1,
        'buildkite.step.type': 'group',
        'buildkite.step.key': groupKey,
        'buildkite.step.group.key': groupKey,
      });
      parent = groupSpan;
    }
    let groupEnd = 0;
    for (const step of groupSteps) {
      const window = span(step.jobs);
      const stepSpan = open('buildkite.step', spanIdFor(buildId, 'step', step.id), parent, window.start, step.attributes);
      let stepFailed = false;
      for (const { job, start, end } of step.jobs) {
        const jobState = str(job.state);
        const failed = FAILED_JOB_STATES.has(jobState ?? '') && job.soft_failed !== true;
        stepFailed ||= failed;
        const jobSpan = open('buildkite.job', spanIdFor(buildId, 'job', String(job.id)), stepSpan, start, jobAttributes(job, { start }));
        setStatus(jobSpan, jobState, jobState === 'passed', failed);
        jobSpan.end(end);
      }
      setStatus(stepSpan, stepFailed ? 'failed' : undefined, !stepFailed, stepFailed);
      stepSpan.end(window.end);
      groupEnd = Math.max(groupEnd, window.end.getTime());
    }
    groupSpan?.end(new Date(groupEnd));
  }
  setStatus(stage, state, state === 'passed', buildFailed);
  stage.end(buildEnd);
  setStatus(root, state, state === 'passed', buildFailed);
  root.end(buildEnd);

  await provider.forceFlush();
  const finished = [...memory.getFinishedSpans()];
  await provider.shutdown();
  return finished;
}

// --- the export -------------------------------------------------------------------------------

const noopMeterProvider: MeterProvider = { getMeter: () => createNoopMeter() };

/** The most of an answer's body kept for the excerpt. */
const MAX_ANSWER_BYTES = 64 * 1024;

interface Answer {
  status: number | null;
  body: string;
  /** No answer, for a reason no retry changes (the transport's refusal of the address). */
  final?: boolean;
}

/**
 * The OTLP/HTTP transport of one delivery, over the server's transport: one POST per export, no
 * retry of its own (the outbox retries with its back-off), and the answer kept for the attempt's
 * record. The SDK's stock Node transport opens its own connections (no address check, only an
 * idle timeout), retries 429/502/503/504 itself and keeps no status of those or of a success.
 */
class SendTransport implements IExporterTransport {
  last: Answer = { status: null, body: '' };

  constructor(
    private readonly url: URL,
    private readonly headers: Record<string, string>,
    private readonly http: HttpSend,
  ) {}

  async send(data: Uint8Array): Promise<ExportResponse> {
    try {
      const res = await this.http({
        method: 'POST',
        url: this.url.href,
        headers: { ...this.headers, 'User-Agent': USER_AGENT },
        body: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
      });
      const body = res.body.subarray(0, MAX_ANSWER_BYTES);
      this.last = { status: res.status, body: body.toString('utf8') };
      if (res.status >= 200 && res.status < 300) return { status: 'success', data: body };
      return { status: 'failure', error: new OTLPExporterError(`HTTP ${res.status}`, res.status, this.last.body) };
    } catch (err) {
      // No answer: the transport's refusal (an address that is not public, the deadline...), in its own words.
      const error = err instanceof Error ? err : new Error(String(err));
      this.last = { status: null, body: error.message, final: typeof err === 'object' && err !== null && 'final' in err && err.final === true };
      return { status: 'failure', error };
    }
  }

  shutdown(): void {}
}

const USER_AGENT = 'Windsock-OpenTelemetry-Notifications';

function clip(text: string): string {
  return text.length > 512 ? `${text.slice(0, 512)}…` : text;
}

/**
 * One delivery of an event to an `open_telemetry_tracing` service: exports the trace of a
 * finished or skipped build (other events: nothing to send, ok). ok when the receiver answered
 * 2xx; the answer's status when one came; `final` for a 4xx other than 408/429 or an endpoint
 * that is no URL.
 */
export async function exportOpenTelemetry(event: NotificationEvent, settings: OpenTelemetrySettings, options: OpenTelemetryOptions): Promise<AttemptResult> {
  if (!OPEN_TELEMETRY_EVENTS.includes(event.name)) return { ok: true, status: null, excerpt: `nothing to export for ${event.name}` };
  const url = tracesUrl(settings.endpoint);
  if (!url) return { ok: false, status: null, excerpt: 'the endpoint is not an http or https URL', final: true };
  const spans = await openTelemetrySpans(event, settings);
  if (spans.length === 0) return { ok: false, status: null, excerpt: 'the event carries no build', final: true };

  const json = options.encoding === 'json';
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(settings.headers ?? {})) {
    const lower = name.toLowerCase();
    if (lower !== 'content-type' && lower !== 'content-length' && lower !== 'host' && typeof value === 'string') headers[name] = value;
  }
  headers['Content-Type'] = json ? 'application/json' : 'application/x-protobuf';
  const transport = new SendTransport(new URL(url), headers, options.send);
  const shared = { timeoutMillis: options.timeoutMillis ?? DEFAULT_TIMEOUT_MS, concurrencyLimit: 1, compression: 'none' as const };
  const metrics = new ExporterMetrics<ReadableSpan[]>({
    componentType: 'otlp_http_span_exporter',
    metricsHelper: TraceExporterMetricsHelper,
    url,
    meterProvider: noopMeterProvider,
    responseAttributesFromError: () => ({}),
  });
  const exporter = new OTLPExporterBase<ReadableSpan[]>(
    createOtlpNetworkExportDelegate(shared, json ? JsonTraceSerializer : ProtobufTraceSerializer, metrics, transport),
  );
  try {
    const result = await new Promise<ExportResult>((resolve) => exporter.export(spans, resolve));
    const { status, body } = transport.last;
    if (result.code === ExportResultCode.SUCCESS) {
      return { ok: true, status, excerpt: `exported ${spans.length} spans of trace ${spans[0]!.spanContext().traceId}` };
    }
    const final = transport.last.final === true || (status !== null && status >= 400 && status < 500 && status !== 408 && status !== 429);
    return { ok: false, status, excerpt: clip(body || (result.error?.message ?? 'export failed')), ...(final ? { final } : {}) };
  } finally {
    await exporter.shutdown();
  }
}
