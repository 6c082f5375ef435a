import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  escapeSlack,
  parseSlackNotify,
  postSlack,
  slackMessageFor,
  slackNotifyMessages,
  slackStateOf,
  webhookChannel,
  type BuildStates,
  type HttpSend,
} from '../../src/notifications/providers/slack';
import type { NotificationEvent } from '../../src/notifications/events';
import { buildEvent, buildRepresentation } from './provider-fixtures';

const ALL: BuildStates = {
  build_passed: true,
  build_fixed: true,
  build_failed: true,
  build_blocked: true,
  build_canceled: true,
  build_failing: true,
  job_activated: true,
};

function finished(state: string, extra: Record<string, unknown> = {}): NotificationEvent {
  return buildEvent('build.finished', buildRepresentation({ state, ...extra }));
}

function blockActivated(): NotificationEvent {
  const event = buildEvent('job.activated', buildRepresentation({ state: 'blocked', blocked: true }));
  event.payload.job = { id: 'block-1', type: 'manual', label: 'Deploy <prod>?', state: 'blocked' };
  return event;
}

describe('slack messages', () => {
  it('maps events to the service build states', () => {
    expect(slackStateOf(finished('passed'))).toBe('build_passed');
    expect(slackStateOf(finished('passed'), 'passed')).toBe('build_passed');
    expect(slackStateOf(finished('passed'), 'failed')).toBe('build_fixed');
    expect(slackStateOf(finished('failed'), 'failed')).toBe('build_failed');
    expect(slackStateOf(finished('canceled'))).toBe('build_canceled');
    expect(slackStateOf(finished('blocked', { blocked: true }))).toBe('build_blocked');
    expect(slackStateOf(finished('passed', { blocked: true }))).toBe('build_blocked');
    expect(slackStateOf(finished('skipped'))).toBeNull();
    expect(slackStateOf(buildEvent('build.failing', buildRepresentation({ state: 'failing' })))).toBe('build_failing');
    expect(slackStateOf(blockActivated())).toBe('job_activated');
    expect(slackStateOf(buildEvent('build.running'))).toBeNull();
    expect(slackStateOf(buildEvent('job.finished'))).toBeNull();
  });

  it('sends only what the build states ask for', () => {
    const failedOnly: BuildStates = { build_failed: true };
    expect(slackMessageFor(finished('failed'), {}, failedOnly)).not.toBeNull();
    expect(slackMessageFor(finished('passed'), {}, failedOnly)).toBeNull();
    expect(slackMessageFor(finished('canceled'), {}, failedOnly)).toBeNull();
    expect(slackMessageFor(buildEvent('build.failing', buildRepresentation({ state: 'failing' })), {}, failedOnly)).toBeNull();
    expect(slackMessageFor(buildEvent('build.failing', buildRepresentation({ state: 'failing' })), {}, { build_failing: true })).not.toBeNull();
    expect(slackMessageFor(blockActivated(), {}, { job_activated: true })).not.toBeNull();
    expect(slackMessageFor(blockActivated(), {}, failedOnly)).toBeNull();
    expect(slackMessageFor(buildEvent('build.scheduled'), {}, ALL)).toBeNull();
    expect(slackMessageFor(finished('blocked', { blocked: true }), {}, { build_blocked: true })).not.toBeNull();
  });

  it('tells a fix from a pass: fixed only after a failure, every pass with build_passed', () => {
    const fixedOnly: BuildStates = { build_fixed: true };
    expect(slackMessageFor(finished('passed'), {}, fixedOnly, 'failed')).not.toBeNull();
    expect(slackMessageFor(finished('passed'), {}, fixedOnly, 'passed')).toBeNull();
    expect(slackMessageFor(finished('passed'), {}, fixedOnly, null)).toBeNull();
    expect(slackMessageFor(finished('passed'), {}, fixedOnly)).toBeNull();
    const fixed = slackMessageFor(finished('passed'), {}, { build_passed: true }, 'failed')!;
    expect(fixed.text).toContain('passed (fixed)');
  });

  it('builds the message: headline with the build link, colour by state, the build facts, emoji by theme', () => {
    const passed = slackMessageFor(finished('passed'), { theme: 'emoji' }, ALL)!;
    expect(passed.text).toBe(':white_check_mark: <http://windsock.test/acme/web/builds/42|Web #42> (main) passed');
    expect(passed.channel).toBeUndefined();
    const [a] = passed.attachments;
    expect(a).toMatchObject({
      color: '#36a64f',
      title: 'Web #42',
      title_link: 'http://windsock.test/acme/web/builds/42',
      fallback: 'Web #42 (main) passed',
      mrkdwn_in: ['text'],
    });
    expect(a!.fields).toEqual([
      { title: 'Branch', value: 'main', short: true },
      { title: 'Commit', value: 'a1b2c3d', short: true },
      { title: 'Created by', value: 'Keith Pitt', short: true },
    ]);
    expect(slackMessageFor(finished('failed'), {}, ALL)!.attachments[0]!.color).toBe('#d0021b');
    expect(slackMessageFor(finished('failed'), { theme: 'text' }, ALL)!.text).toBe('<http://windsock.test/acme/web/builds/42|Web #42> (main) failed');
    expect(slackMessageFor(finished('canceled'), {}, ALL)!.text).toContain('was canceled');
    expect(slackMessageFor(blockActivated(), { theme: 'text' }, ALL)!.text).toBe(
      '<http://windsock.test/acme/web/builds/42|Web #42> (main) is waiting on Deploy &lt;prod&gt;?',
    );
  });

  it('escapes &, < and > of everything taken from the build', () => {
    expect(escapeSlack('a & <b> c')).toBe('a &amp; &lt;b&gt; c');
    const event = finished('failed', {
      branch: 'fix/<script>&co',
      message: 'Merge <@U123> & <!channel>',
      creator: { name: 'A <B>' },
      pipeline: { name: 'R&D <web>', slug: 'web' },
    });
    event.payload.pipeline = { name: 'R&D <web>', slug: 'web' };
    const m = slackMessageFor(event, { theme: 'text' }, ALL)!;
    expect(m.text).toBe('<http://windsock.test/acme/web/builds/42|R&amp;D &lt;web&gt; #42> (fix/&lt;script&gt;&amp;co) failed');
    const [a] = m.attachments;
    expect(a!.text).toBe('Merge &lt;@U123&gt; &amp; &lt;!channel&gt;');
    expect(a!.title).toBe('R&amp;D &lt;web&gt; #42');
    expect(a!.fallback).not.toMatch(/[<>]/);
    expect(a!.fields.find((f) => f.title === 'Branch')!.value).toBe('fix/&lt;script&gt;&amp;co');
    expect(a!.fields.find((f) => f.title === 'Created by')!.value).toBe('A &lt;B&gt;');
  });
});

describe('slack notify YAML', () => {
  it('reads the documented forms of the slack attribute', () => {
    expect(parseSlackNotify('#general')).toEqual({ channels: ['#general'] });
    expect(parseSlackNotify({ channels: ['buildkite-community#sre', '@someuser'], message: 'SRE <@U024BE7LH>' })).toEqual({
      channels: ['buildkite-community#sre', '@someuser'],
      message: 'SRE <@U024BE7LH>',
    });
    expect(parseSlackNotify({ channels: [] })).toBeNull();
    // A message and no channels: the service's own channel (the pipeline reader takes this form).
    expect(parseSlackNotify({ message: 'Shipped' })).toEqual({ channels: [], message: 'Shipped' });
    expect(parseSlackNotify(42)).toBeNull();
    expect(parseSlackNotify('')).toBeNull();
  });

  it('names the webhook channel without the workspace', () => {
    expect(webhookChannel('#general')).toBe('#general');
    expect(webhookChannel('buildkite-community#general')).toBe('#general');
    expect(webhookChannel('@someuser')).toBe('@someuser');
    expect(webhookChannel('buildkite-community@U12345678')).toBe('U12345678');
    expect(webhookChannel('C0B1SRLV43S')).toBe('C0B1SRLV43S');
  });

  it('posts one message per channel at build.finished and build.failing, the custom message as written', () => {
    const notification = { channels: ['#general', 'team#ops'], message: 'Deployed <@U024BE7LH>!' };
    const messages = slackNotifyMessages(finished('passed'), {}, notification);
    expect(messages.map((m) => m.channel)).toEqual(['#general', '#ops']);
    expect(messages[0]!.text).toBe('Deployed <@U024BE7LH>!\n<http://windsock.test/acme/web/builds/42|Web #42> (main) passed');
    expect(messages[0]!.attachments[0]!.color).toBe('#36a64f');
    expect(slackNotifyMessages(buildEvent('build.failing', buildRepresentation({ state: 'failing' })), {}, { channels: ['#x'] })[0]!.text).toContain(
      'is failing',
    );
    expect(slackNotifyMessages(buildEvent('build.running'), {}, notification)).toEqual([]);
    // No channel named: one message, with no override, to the service's own channel.
    const own = slackNotifyMessages(finished('passed'), {}, { channels: [], message: 'Shipped' });
    expect(own).toHaveLength(1);
    expect(own[0]).not.toHaveProperty('channel');
    expect(own[0]!.text).toMatch(/^Shipped\n/);
    expect(slackNotifyMessages(buildEvent('job.activated'), {}, notification)).toEqual([]);
  });
});

describe('slack settings and delivery', () => {
  /** The HttpSend shape over plain node http, standing in for the SSRF-safe client. */
  const send: HttpSend = (req) =>
    new Promise((resolve, reject) => {
      const r = http.request(req.url, { method: req.method, headers: req.headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      r.on('error', reject);
      r.end(req.body);
    });

  async function receiver(status: number, body: string) {
    const received: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
    const server = http.createServer((req, res) => {
      let data = '';
      req.on('data', (c: Buffer) => (data += c.toString('utf8')));
      req.on('end', () => {
        received.push({ method: req.method, url: req.url, headers: req.headers, body: data });
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return { received, url: `http://127.0.0.1:${port}/services/T000/B000/secret`, close: () => new Promise<void>((r) => server.close(() => r())) };
  }

  it('posts the payload as JSON to the webhook', async () => {
    const r = await receiver(200, 'ok');
    try {
      const msg = slackNotifyMessages(finished('failed'), {}, { channels: ['#ops'] })[0]!;
      expect(await postSlack(r.url, msg, send)).toEqual({ ok: true, status: 200, excerpt: 'ok' });
      expect(r.received).toHaveLength(1);
      const req = r.received[0]!;
      expect(req.method).toBe('POST');
      expect(req.url).toBe('/services/T000/B000/secret');
      expect(req.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(req.body)).toEqual(msg);
      expect(JSON.parse(req.body).channel).toBe('#ops');
    } finally {
      await r.close();
    }
  });

  it('gives up on a removed webhook, retries a server error, and never shows the URL', async () => {
    const gone = await receiver(404, 'no_service');
    const msg = slackMessageFor(finished('failed'), {}, ALL)!;
    try {
      expect(await postSlack(gone.url, msg, send)).toEqual({ ok: false, status: 404, excerpt: 'no_service', final: true });
    } finally {
      await gone.close();
    }
    const down = await receiver(503, 'try later');
    try {
      expect(await postSlack(down.url, msg, send)).toEqual({ ok: false, status: 503, excerpt: 'try later' });
    } finally {
      await down.close();
    }
    const refusing: HttpSend = (req) => Promise.reject(new Error(`connect ECONNREFUSED for ${req.url}`));
    const result = await postSlack('https://hooks.example.com/services/T/B/secret', msg, refusing);
    expect(result).toEqual({ ok: false, status: null, excerpt: 'connect ECONNREFUSED for [webhook URL]' });
  });
});
