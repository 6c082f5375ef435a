/**
 * `windsock service list|create|delete|enable|disable`: the command line acts on the same
 * notification services as the REST API (as the installation's operator: no creator), refuses
 * bad settings with the field named (exit code 1), and a missing option or a provider it does not
 * offer with the command's help (exit code 2).
 */
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { loadConfig } from '../../src/config';
import { startServer } from '../../src/server';
import { run, withTempDataDir } from './support';

describe('windsock service (embedded SQLite in a temp data dir)', () => {
  withTempDataDir('windsock-service-');

  it('creates, lists, disables, enables and deletes services the API then shows', async () => {
    expect((await run('org', 'create', '--name', 'Notify Inc')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Nia', '--email', 'nia@example.com', '--org', 'notify-inc', '--role', 'admin')).code).toBe(0);

    const hook = await run(
      'service',
      'create',
      '--org',
      'notify-inc',
      '--provider',
      'webhook',
      '--url',
      'https://example.com/hook',
      '--token',
      'cli-token',
      '--events',
      'build.finished,job.finished',
      '--description',
      'Deploys',
      '--build-states',
      'build_failed,build_fixed',
      '--branches',
      'main',
    );
    expect(hook.code).toBe(0);
    const hookId = /notification service (\S+) in notify-inc/.exec(hook.text)![1]!;
    expect(hook.text).toBe(`created webhook notification service ${hookId} in notify-inc\n`);
    const otel = await run(
      'service',
      'create',
      '--org',
      'notify-inc',
      '--provider',
      'open_telemetry_tracing',
      '--url',
      'https://otel.example.com/v1/traces',
      '--header',
      'Authorization=Bearer cli-header-secret',
    );
    expect(otel.code).toBe(0);
    const otelId = /notification service (\S+) in/.exec(otel.text)![1]!;

    expect((await run('service', 'disable', '--org', 'notify-inc', '--id', otelId)).text).toBe(`notification service ${otelId} is disabled\n`);
    const list = await run('service', 'list', '--org', 'notify-inc');
    expect(list).toEqual({
      code: 0,
      text: `${hookId}  webhook  enabled  all  Deploys\n${otelId}  open_telemetry_tracing  disabled  all\n`,
    });
    expect((await run('service', 'enable', '--org', 'notify-inc', '--id', otelId)).text).toBe(`notification service ${otelId} is enabled\n`);

    const refused = await run('service', 'create', '--org', 'notify-inc', '--provider', 'aws_event_bridge', '--url', 'https://x.example.com');
    expect(refused.code).toBe(2);
    expect(refused.text).toMatch(
      /^windsock: option '--provider <PROVIDER>' argument 'aws_event_bridge' is invalid\. aws_event_bridge sends to Amazon EventBridge.*\. Allowed choices are webhook, slack, open_telemetry_tracing\.\n/,
    );
    const badUrl = await run('service', 'create', '--org', 'notify-inc', '--provider', 'slack', '--url', 'ftp://example.com/x');
    expect(badUrl).toEqual({ code: 1, text: 'windsock: settings.url must be an http or https URL\n' });
    expect((await run('service', 'create', '--org', 'notify-inc', '--provider', 'webhook')).code).toBe(2);
    expect((await run('service', 'delete', '--org', 'notify-inc', '--id', '00000000-0000-4000-8000-000000000000')).code).toBe(1);

    const created = await run('token', 'create', '--email', 'nia@example.com', '--org', 'notify-inc', '--scopes', 'read_notification_services');
    const jwt = created.text.trim().split('\n').at(-1)!;
    const s = await startServer(loadConfig(), new PassThrough());
    try {
      const res = await request(s.url).get('/v2/organizations/notify-inc/services').set('Authorization', `Bearer ${jwt}`).expect(200);
      expect(res.body.items).toEqual([
        expect.objectContaining({
          id: hookId,
          description: 'Deploys',
          branch_configuration: 'main',
          created_by: null,
          build_states: expect.objectContaining({ build_failed: true, build_fixed: true, build_passed: false }),
          settings: expect.objectContaining({ url: 'https://example.com/hook', token: 'cli-token', events: ['build.finished', 'job.finished'] }),
        }),
        expect.objectContaining({ id: otelId, enabled: true, provider: { id: 'open_telemetry_tracing', name: 'OpenTelemetry Tracing' } }),
      ]);
      expect(JSON.stringify(res.body)).not.toContain('cli-header-secret');
    } finally {
      await s.close();
    }
    expect((await run('service', 'delete', '--org', 'notify-inc', '--id', hookId)).text).toBe(`deleted notification service ${hookId} from notify-inc\n`);
    expect((await run('service', 'list', '--org', 'notify-inc')).text).not.toContain(hookId);
  });
});
