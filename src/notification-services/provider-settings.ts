/**
 * The providers a notification service may have, and their settings: which are accepted, their
 * defaults, which are secret (stored sealed, never answered), and the checks that give a field
 * error naming `settings.<name>`. Providers that need a cloud this server cannot reach, or an
 * OAuth connection made in Buildkite's own interface, are refused with the reason.
 */
import crypto from 'node:crypto';
import type { FieldError } from '../core/errors';
import { DEFAULT_WEBHOOK_EVENTS, EVENT_NAMES } from '../notifications/events';
import type { ProviderId } from './repository';
import { isOneOf } from '../db/row-types';
import { isStringArray, isStringRecord } from '../core/guards';

export const PROVIDERS: Record<ProviderId, { name: string; graphqlType: string }> = {
  webhook: { name: 'Webhook', graphqlType: 'NotificationServiceWebhook' },
  slack: { name: 'Slack', graphqlType: 'NotificationServiceSlack' },
  open_telemetry_tracing: { name: 'OpenTelemetry Tracing', graphqlType: 'NotificationServiceOpenTelemetryTracing' },
};

/** Providers of the real API this server does not offer, and why. */
export const REFUSED_PROVIDERS: Record<string, string> = {
  aws_event_bridge: 'sends to Amazon EventBridge, which this server cannot reach (it has no AWS partner event source)',
  datadog_pipeline_visibility: 'sends to Datadog Pipeline Visibility, which this server cannot reach',
  slack_workspace: 'is connected with OAuth in the Buildkite interface; use the slack provider with an incoming webhook URL',
  linear: 'is connected with OAuth in the Buildkite interface, which this server does not have',
  event_log_api: 'is not available on this server',
};

export function isProvider(id: string): id is ProviderId {
  return Object.prototype.hasOwnProperty.call(PROVIDERS, id);
}

export const isString = (v: unknown): v is string => typeof v === 'string';
export const isNumber = (v: unknown): v is number => typeof v === 'number';
export const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';

/** A stored setting (what applySettings wrote), checked: a TypeError names it when it is missing or holds something else. */
export function setting<T>(settings: Record<string, unknown>, key: string, is: (v: unknown) => v is T): T {
  const v = settings[key];
  if (is(v)) return v;
  throw new TypeError(`settings.${key}: unexpected ${JSON.stringify(v)}`);
}

/** A stored setting, checked, or `fallback` when it is not set (missing or null). */
export function settingOr<T, F>(settings: Record<string, unknown>, key: string, is: (v: unknown) => v is T, fallback: F): T | F {
  const v = settings[key];
  return v === undefined || v === null ? fallback : setting(settings, key, is);
}

/** The latest webhook payload version (and the default). */
export const WEBHOOK_VERSION = 3;

/** Settings split for storage: what may be answered, and what is sealed. */
export interface SplitSettings {
  plain: Record<string, unknown>;
  secrets: Record<string, unknown>;
}

const MAX_URL = 2000;
const MAX_TEXT = 1000;
const MAX_MAP_ENTRIES = 50;
const MAX_MAP_VALUE = 4096;

/** `value` masked as the real API masks a secret: all but the last four characters as X. */
export function mask(value: string): string {
  const keep = Math.min(4, Math.floor(value.length / 2));
  return 'X'.repeat(value.length - keep) + value.slice(value.length - keep);
}

/** Whether a secret value sent in an update means "keep the stored one": the stored value's mask, sent back unchanged. */
function keeps(sent: unknown, stored: unknown): boolean {
  return typeof sent === 'string' && typeof stored === 'string' && sent !== stored && sent === mask(stored);
}

/** Query parameters whose value is a credential: `token`, `api_key`, `secret`, `password`, `sig`... */
const SECRET_PARAM = /(token|key|secret|passw(or)?d|pwd|signature|^sig$|auth|credential)/i;

/**
 * A webhook URL with its credentials masked (userinfo, and the values of query parameters named
 * like a credential), or null when it carries none. Such a URL is a secret: stored sealed, and
 * answered only masked (the mask sent back in an update keeps the stored URL).
 */
export function maskedWebhookUrl(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  let secret = false;
  if (url.username) {
    url.username = mask(decodeURIComponent(url.username));
    secret = true;
  }
  if (url.password) {
    url.password = mask(decodeURIComponent(url.password));
    secret = true;
  }
  const params = [...url.searchParams.entries()];
  if (params.some(([name, value]) => SECRET_PARAM.test(name) && value)) {
    secret = true;
    url.search = new URLSearchParams(
      params.map(([name, value]): [string, string] => [name, SECRET_PARAM.test(name) && value ? mask(value) : value]),
    ).toString();
  }
  return secret ? url.toString() : null;
}

function httpUrl(value: unknown, field: string, errors: FieldError[], required: boolean): string | undefined {
  if (value === undefined || value === null || value === '') {
    if (required) errors.push({ field, code: "can't be blank" });
    return undefined;
  }
  if (typeof value !== 'string') {
    errors.push({ field, code: 'must be a string' });
    return undefined;
  }
  const text = value.trim();
  if (text.length > MAX_URL) {
    errors.push({ field, code: `is too long (at most ${MAX_URL} characters)` });
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    errors.push({ field, code: 'must be an http or https URL' });
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    errors.push({ field, code: 'must be an http or https URL' });
    return undefined;
  }
  return text;
}

/** An HTTP header name (RFC 9110's token): what a request may carry without Node refusing to send it. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function hasCredentials(text: string): boolean {
  const url = new URL(text);
  return url.username !== '' || url.password !== '';
}

function stringMap(value: unknown, field: string, errors: FieldError[], names?: { rule: RegExp; code: string }): Record<string, string> | undefined {
  if (value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    errors.push({ field, code: 'must be an object of strings' });
    return undefined;
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_MAP_ENTRIES) {
    errors.push({ field, code: `has too many entries (at most ${MAX_MAP_ENTRIES})` });
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (!k.trim() || k.length > 255) {
      errors.push({ field, code: 'has an empty or too long name' });
      return undefined;
    }
    if (names && !names.rule.test(k)) {
      errors.push({ field, code: names.code });
      return undefined;
    }
    if (typeof v !== 'string') {
      errors.push({ field: `${field}.${k}`, code: 'must be a string' });
      return undefined;
    }
    if (v.length > MAX_MAP_VALUE) {
      errors.push({ field: `${field}.${k}`, code: `is too long (at most ${MAX_MAP_VALUE} characters)` });
      return undefined;
    }
    out[k] = v;
  }
  return out;
}

function optionalText(value: unknown, field: string, errors: FieldError[]): string | null | undefined {
  if (value === undefined) return undefined;
  if (value === null || value === '') return null;
  if (typeof value !== 'string') {
    errors.push({ field, code: 'must be a string' });
    return undefined;
  }
  if (value.length > MAX_TEXT) {
    errors.push({ field, code: `is too long (at most ${MAX_TEXT} characters)` });
    return undefined;
  }
  return value;
}

const ACCEPTED: Record<ProviderId, string[]> = {
  webhook: ['url', 'token', 'token_mode', 'version', 'events', 'tls_verify'],
  slack: ['url', 'theme'],
  open_telemetry_tracing: ['endpoint', 'service_name', 'headers', 'resource_attributes', 'tracestate'],
};

/**
 * The settings of a provider after `sent` is applied over `current` (the stored ones, secrets
 * opened; none on create): only what is sent changes. Field errors are pushed to `errors`.
 */
export function applySettings(
  provider: ProviderId,
  current: Record<string, unknown> | null,
  sent: Record<string, unknown> | undefined,
  errors: FieldError[],
): SplitSettings {
  const input = sent ?? {};
  for (const key of Object.keys(input)) {
    if (!ACCEPTED[provider].includes(key)) errors.push({ field: `settings.${key}`, code: `is not a setting of the ${provider} provider` });
  }
  const has = (k: string) => Object.prototype.hasOwnProperty.call(input, k);
  const cur = current ?? {};
  switch (provider) {
    case 'webhook': {
      const stored = settingOr(cur, 'url', isString, undefined);
      // The masked URL sent back unchanged keeps the stored one (its credentials are never answered).
      const keepUrl = has('url') && typeof input.url === 'string' && stored !== undefined && input.url === maskedWebhookUrl(stored);
      const url = has('url') && !keepUrl ? httpUrl(input.url, 'settings.url', errors, true) : stored;
      if (url === undefined && !has('url')) errors.push({ field: 'settings.url', code: "can't be blank" });
      let token = settingOr(cur, 'token', isString, null);
      if (has('token') && !keeps(input.token, cur.token)) {
        const t = optionalText(input.token, 'settings.token', errors);
        if (t !== undefined) token = t;
      }
      // The docs' webhook token: "By default, Buildkite will send a token with each webhook". A
      // service created without one gets one (answered in full, as the services API answers it).
      if (current === null && !token) token = crypto.randomBytes(16).toString('hex');
      let tokenMode = settingOr(cur, 'token_mode', isString, 'token');
      if (has('token_mode')) {
        if (input.token_mode !== 'token' && input.token_mode !== 'signature') errors.push({ field: 'settings.token_mode', code: 'must be token or signature' });
        else tokenMode = input.token_mode;
      }
      if (tokenMode === 'signature' && !token)
        errors.push({ field: 'settings.token', code: "can't be blank when token_mode is signature (the signature is made with it)" });
      let version = settingOr(cur, 'version', isNumber, WEBHOOK_VERSION);
      if (has('version')) {
        const v = input.version;
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > WEBHOOK_VERSION) {
          errors.push({ field: 'settings.version', code: `must be a whole number from 1 to ${WEBHOOK_VERSION}` });
        } else if (current && v < version) {
          errors.push({ field: 'settings.version', code: `can't be downgraded (it is ${version})` });
        } else version = v;
      }
      let events: string[] = settingOr(cur, 'events', isStringArray, DEFAULT_WEBHOOK_EVENTS);
      if (has('events')) {
        const e = input.events;
        if (!Array.isArray(e) || e.some((x) => typeof x !== 'string') || e.length > 50) {
          errors.push({ field: 'settings.events', code: 'must be a list of event names' });
        } else {
          const unknown = e.filter((x) => !isOneOf(EVENT_NAMES, x));
          if (unknown.length)
            errors.push({ field: 'settings.events', code: `has unknown events: ${unknown.slice(0, 5).join(', ')} (known: ${EVENT_NAMES.join(', ')})` });
          else if (e.length === 0) errors.push({ field: 'settings.events', code: "can't be empty" });
          else events = [...new Set<string>(e)];
        }
      }
      let tlsVerify = settingOr(cur, 'tls_verify', isBoolean, true);
      if (has('tls_verify')) {
        if (typeof input.tls_verify !== 'boolean') errors.push({ field: 'settings.tls_verify', code: 'must be true or false' });
        else tlsVerify = input.tls_verify;
      }
      // A URL with credentials is sealed with the token; the plain settings keep only its mask.
      const masked = url === undefined ? null : maskedWebhookUrl(url);
      return masked
        ? { plain: { url: masked, version, token_mode: tokenMode, events, tls_verify: tlsVerify }, secrets: { token, url } }
        : { plain: { url, version, token_mode: tokenMode, events, tls_verify: tlsVerify }, secrets: { token } };
    }
    case 'slack': {
      let url = settingOr(cur, 'url', isString, undefined);
      if (has('url') && !keeps(input.url, cur.url)) url = httpUrl(input.url, 'settings.url', errors, true);
      else if (url === undefined) errors.push({ field: 'settings.url', code: "can't be blank" });
      let theme = settingOr(cur, 'theme', isString, 'text');
      if (has('theme')) {
        if (input.theme !== 'text' && input.theme !== 'emoji') errors.push({ field: 'settings.theme', code: 'must be text or emoji' });
        else theme = input.theme;
      }
      return { plain: { theme }, secrets: { url } };
    }
    case 'open_telemetry_tracing': {
      const endpoint = has('endpoint') ? httpUrl(input.endpoint, 'settings.endpoint', errors, true) : settingOr(cur, 'endpoint', isString, undefined);
      // The endpoint is answered in the clear: credentials go in the sealed headers, never in it.
      if (has('endpoint') && endpoint !== undefined && hasCredentials(endpoint))
        errors.push({ field: 'settings.endpoint', code: 'must not carry credentials (send them in headers)' });
      if (endpoint === undefined && !has('endpoint')) errors.push({ field: 'settings.endpoint', code: "can't be blank" });
      let serviceName = settingOr(cur, 'service_name', isString, 'buildkite');
      if (has('service_name')) {
        const n = optionalText(input.service_name, 'settings.service_name', errors);
        if (n !== undefined) serviceName = n ?? 'buildkite';
      }
      let headers: Record<string, string> = settingOr(cur, 'headers', isStringRecord, {});
      if (has('headers')) {
        const h = stringMap(input.headers, 'settings.headers', errors, { rule: HEADER_NAME, code: 'has a name that is not an HTTP header name' });
        if (h) {
          // A header sent back as the stored value's mask keeps the stored value.
          headers = Object.fromEntries(Object.entries(h).map(([k, v]) => [k, keeps(v, headers[k]) ? headers[k]! : v]));
        }
      }
      const maps: Record<string, Record<string, string>> = {};
      for (const key of ['resource_attributes', 'tracestate']) {
        maps[key] = settingOr(cur, key, isStringRecord, {});
        if (has(key)) {
          const m = stringMap(input[key], `settings.${key}`, errors);
          if (m) maps[key] = m;
        }
      }
      return { plain: { endpoint, service_name: serviceName, ...maps }, secrets: { headers } };
    }
  }
}
