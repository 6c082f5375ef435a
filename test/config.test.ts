import os from 'node:os';
import { ConfigError, loadConfig, parseClockMode } from '../src/config';

describe('config', () => {
  it('has defaults that work on a fresh machine', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 8080, host: '127.0.0.1', databaseKind: 'sqlite', publicUrl: 'http://127.0.0.1:8080', logLevel: 'info' });
    expect(c.databaseUrl).toMatch(/data\/windsock\.sqlite3$/);
    expect(c.jwtSecret).toBeUndefined();
    expect(c).toMatchObject({ rateLimits: { perOrganization: 200, perUser: 50, failedAuthPerAddress: 60 }, shutdownTimeoutMs: 10_000, shutdownDelayMs: 0 });
    expect(c).toMatchObject({ headersTimeoutMs: 20_000, requestTimeoutMs: 60_000 });
  });

  it('reads the rate limits and the shutdown delay', () => {
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_PER_USER_PER_MINUTE: '0', AUTH_FAILURE_LIMIT_PER_MINUTE: '5' }).rateLimits).toEqual({
      perOrganization: 0,
      perUser: 0,
      failedAuthPerAddress: 5,
    });
    expect(loadConfig({ SHUTDOWN_DELAY_MS: '5000', SHUTDOWN_TIMEOUT_MS: '20000' })).toMatchObject({ shutdownDelayMs: 5000, shutdownTimeoutMs: 20000 });
  });

  it('reads WEBHOOK_IPS (what GET /v2/meta answers): none by default, or addresses and CIDR subnets', () => {
    expect(loadConfig({}).webhookIps).toEqual([]);
    expect(loadConfig({ WEBHOOK_IPS: ' 192.0.2.0/24, 198.51.100.12,2001:db8::/32 ' }).webhookIps).toEqual(['192.0.2.0/24', '198.51.100.12', '2001:db8::/32']);
    expect(() => loadConfig({ WEBHOOK_IPS: '192.0.2.0/33' })).toThrow(/WEBHOOK_IPS .* "192\.0\.2\.0\/33" is neither/);
    expect(() => loadConfig({ WEBHOOK_IPS: 'example.com' })).toThrow(ConfigError);
  });

  it('reads the commit status providers: GitLab and Bitbucket Cloud APIs by default, credentials unset', () => {
    const c = loadConfig({});
    expect(c.gitlab).toEqual({ apiUrl: 'https://gitlab.com/api/v4', token: undefined });
    expect(c.bitbucket).toEqual({ apiUrl: 'https://api.bitbucket.org/2.0', token: undefined, username: undefined, appPassword: undefined });
    expect(loadConfig({ GITLAB_API_URL: 'https://git.example.org/api/v4/', GITLAB_TOKEN: 'glpat-abc' }).gitlab).toEqual({
      apiUrl: 'https://git.example.org/api/v4',
      token: 'glpat-abc',
    });
    expect(loadConfig({ BITBUCKET_TOKEN: 'bb-token' }).bitbucket).toMatchObject({ token: 'bb-token', username: undefined });
    expect(loadConfig({ BITBUCKET_USERNAME: 'me', BITBUCKET_APP_PASSWORD: 'pw' }).bitbucket).toMatchObject({
      token: undefined,
      username: 'me',
      appPassword: 'pw',
    });
  });

  it('reads the outbound settings: private destinations refused, a 10 s deadline and a 64 KiB answer by default', () => {
    expect(loadConfig({}).outbound).toEqual({ allowPrivate: false, timeoutMs: 10_000, maxResponseBytes: 65_536 });
    expect(loadConfig({ OUTBOUND_ALLOW_PRIVATE: 'true', OUTBOUND_TIMEOUT_MS: '2500', OUTBOUND_MAX_RESPONSE_BYTES: '4096' }).outbound).toEqual({
      allowPrivate: true,
      timeoutMs: 2500,
      maxResponseBytes: 4096,
    });
  });

  it("reads TRUST_PROXY: off by default, a hop count, or addresses, subnets and Express's names", () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8, 192.0.2.1' }).trustProxy).toEqual(['loopback', '10.0.0.0/8', 'fd00::/8', '192.0.2.1']);
  });

  it('reads the sweep settings: interval, when an agent is lost, when a scheduled job expires (0: never)', () => {
    expect(loadConfig({}).sweep).toEqual({ intervalMs: 5_000, agentLostAfterMs: 180_000, jobExpiryMs: 30 * 1_440 * 60_000 });
    expect(loadConfig({ SWEEP_INTERVAL_MS: '250', AGENT_LOST_AFTER_SECONDS: '30', JOB_EXPIRY_MINUTES: '0' }).sweep).toEqual({
      intervalMs: 250,
      agentLostAfterMs: 30_000,
      jobExpiryMs: 0,
    });
  });

  it('reads ARTIFACTS_STORE: the disk by default, or an S3 bucket and prefix with its endpoint, region and credentials', () => {
    expect(loadConfig({}).artifacts.s3).toBeUndefined();
    expect(loadConfig({ ARTIFACTS_STORE: 'disk' }).artifacts.s3).toBeUndefined();
    const keys = { ARTIFACTS_S3_ACCESS_KEY_ID: 'AKIDEXAMPLE', ARTIFACTS_S3_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG' };
    expect(loadConfig({ ARTIFACTS_STORE: 's3://ci-artifacts/windsock/', ...keys, ARTIFACTS_S3_REGION: 'eu-west-1' }).artifacts.s3).toEqual({
      bucket: 'ci-artifacts',
      prefix: 'windsock/',
      region: 'eu-west-1',
      accessKeyId: 'AKIDEXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG',
      forcePathStyle: false,
    });
    // An endpoint of its own (MinIO, Ceph...): path-style by default, which such servers expect.
    const minio = loadConfig({ ARTIFACTS_STORE: 's3://ci-artifacts', ...keys, ARTIFACTS_S3_ENDPOINT: 'http://minio.internal:9000' }).artifacts.s3;
    expect(minio).toMatchObject({ bucket: 'ci-artifacts', prefix: '', endpoint: 'http://minio.internal:9000', region: 'us-east-1', forcePathStyle: true });
    expect(
      loadConfig({ ARTIFACTS_STORE: 's3://ci-artifacts', ...keys, ARTIFACTS_S3_ENDPOINT: 'https://s3.example.com', ARTIFACTS_S3_FORCE_PATH_STYLE: 'false' })
        .artifacts.s3?.forcePathStyle,
    ).toBe(false);

    expect(() => loadConfig({ ARTIFACTS_STORE: 's3://ci-artifacts' })).toThrow(/needs ARTIFACTS_S3_ACCESS_KEY_ID and ARTIFACTS_S3_SECRET_ACCESS_KEY/);
    expect(() => loadConfig({ ARTIFACTS_STORE: 'gs://bucket', ...keys })).toThrow(/ARTIFACTS_STORE must be disk or s3:\/\/bucket\/prefix/);
    expect(() => loadConfig({ ARTIFACTS_STORE: 's3://Upper_Case', ...keys })).toThrow(ConfigError);
    expect(() => loadConfig({ ARTIFACTS_STORE: 's3://ci-artifacts/a//b', ...keys })).toThrow(/prefix must be segments/);
    expect(() => loadConfig({ ARTIFACTS_STORE: 's3://ci-artifacts/../b', ...keys })).toThrow(/prefix must be segments/);
    expect(() => loadConfig({ ARTIFACTS_STORE: 's3://ci-artifacts', ...keys, ARTIFACTS_S3_ENDPOINT: 'ftp://x' })).toThrow(
      /ARTIFACTS_S3_ENDPOINT must be an absolute http\(s\) URL/,
    );
    for (const region of ['-', 'eu-west-1-', '-eu-west-1']) {
      expect(() => loadConfig({ ARTIFACTS_STORE: 's3://ci-artifacts', ...keys, ARTIFACTS_S3_REGION: region })).toThrow(
        /ARTIFACTS_S3_REGION must be a region name/,
      );
    }
    expect(() => loadConfig({ ...keys })).toThrow(/ARTIFACTS_S3_ACCESS_KEY_ID, ARTIFACTS_S3_SECRET_ACCESS_KEY only apply with ARTIFACTS_STORE=s3/);
    // The secret is never in a message.
    try {
      loadConfig({ ARTIFACTS_STORE: 's3://ci-artifacts', ...keys, ARTIFACTS_S3_REGION: 'Not A Region' });
      throw new Error('accepted');
    } catch (err) {
      expect(String(err)).toMatch(/ARTIFACTS_S3_REGION must be a region name/);
      expect(String(err)).not.toContain(keys.ARTIFACTS_S3_SECRET_ACCESS_KEY);
    }
  });

  it('reads how often the pipeline schedules are looked at: every 10 s by default, always under a minute', () => {
    expect(loadConfig({}).scheduler).toEqual({ intervalMs: 10_000 });
    expect(loadConfig({ SCHEDULE_INTERVAL_MS: '500' }).scheduler).toEqual({ intervalMs: 500 });
  });

  it("caps a job's log at 1,024 MiB by default (Buildkite's log size per job), or at JOB_LOG_LIMIT_BYTES", () => {
    expect(loadConfig({}).jobLogLimitBytes).toBe(1024 * 1024 * 1024);
    expect(loadConfig({ JOB_LOG_LIMIT_BYTES: '1048576' }).jobLogLimitBytes).toBe(1048576);
    expect(() => loadConfig({ JOB_LOG_LIMIT_BYTES: '100' })).toThrow(/JOB_LOG_LIMIT_BYTES must be a whole number from 1024/);
    expect(() => loadConfig({ JOB_LOG_LIMIT_BYTES: '1GiB' })).toThrow(ConfigError);
  });

  it('recognises Postgres and SQLite database URLs', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u@h:5432/db' })).toMatchObject({ databaseKind: 'postgres', databaseUrl: 'postgres://u@h:5432/db' });
    expect(loadConfig({ DATABASE_URL: 'sqlite:/tmp/x.db' })).toMatchObject({ databaseKind: 'sqlite', databaseUrl: '/tmp/x.db' });
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ PUBLIC_URL: 'not a url' }, /PUBLIC_URL/],
    [{ PUBLIC_URL: 'ftp://x' }, /PUBLIC_URL/],
    [{ JWT_SECRET: 'short' }, /JWT_SECRET/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ VALIDATE_RESPONSES: 'maybe' }, /VALIDATE_RESPONSES/],
    [{ GITHUB_API_URL: 'nope' }, /GITHUB_API_URL/],
    [{ GITLAB_API_URL: 'gitlab.com' }, /GITLAB_API_URL/],
    [{ GITLAB_TOKEN: 'two\nlines' }, /GITLAB_TOKEN/],
    [{ BITBUCKET_API_URL: 'ftp://x' }, /BITBUCKET_API_URL/],
    [{ BITBUCKET_TOKEN: 'has space' }, /BITBUCKET_TOKEN/],
    [{ BITBUCKET_USERNAME: 'me' }, /BITBUCKET_USERNAME and BITBUCKET_APP_PASSWORD must be set together/],
    [{ BITBUCKET_APP_PASSWORD: 'pw' }, /BITBUCKET_USERNAME and BITBUCKET_APP_PASSWORD must be set together/],
    [{ BITBUCKET_TOKEN: 't', BITBUCKET_USERNAME: 'me', BITBUCKET_APP_PASSWORD: 'pw' }, /not both/],
    [{ RATE_LIMIT_PER_MINUTE: '-1' }, /RATE_LIMIT_PER_MINUTE/],
    [{ AUTH_FAILURE_LIMIT_PER_MINUTE: 'lots' }, /AUTH_FAILURE_LIMIT_PER_MINUTE/],
    [{ TRUST_PROXY: 'true' }, /TRUST_PROXY=true would trust any client/],
    [{ TRUST_PROXY: '10.0.0.0/33' }, /TRUST_PROXY.*"10.0.0.0\/33"/],
    [{ TRUST_PROXY: 'loopback, proxy.internal' }, /TRUST_PROXY.*"proxy.internal"/],
    [{ TRUST_PROXY: '1000' }, /TRUST_PROXY/],
    [{ SHUTDOWN_DELAY_MS: '10000' }, /SHUTDOWN_DELAY_MS/],
    [{ HEADERS_TIMEOUT_MS: '10' }, /HEADERS_TIMEOUT_MS/],
    [{ REQUEST_TIMEOUT_MS: 'soon' }, /REQUEST_TIMEOUT_MS/],
    [{ SWEEP_INTERVAL_MS: '10' }, /SWEEP_INTERVAL_MS/],
    [{ SCHEDULE_INTERVAL_MS: '60000' }, /SCHEDULE_INTERVAL_MS/],
    [{ AGENT_LOST_AFTER_SECONDS: '0' }, /AGENT_LOST_AFTER_SECONDS/],
    [{ JOB_EXPIRY_MINUTES: 'never' }, /JOB_EXPIRY_MINUTES/],
    [{ OUTBOUND_ALLOW_PRIVATE: 'sometimes' }, /OUTBOUND_ALLOW_PRIVATE must be true or false/],
    [{ OUTBOUND_TIMEOUT_MS: '0' }, /OUTBOUND_TIMEOUT_MS must be a whole number from 100/],
    [{ OUTBOUND_TIMEOUT_MS: '10s' }, /OUTBOUND_TIMEOUT_MS/],
    [{ OUTBOUND_MAX_RESPONSE_BYTES: '100' }, /OUTBOUND_MAX_RESPONSE_BYTES must be a whole number from 1024/],
    [{ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' }, /HEADERS_TIMEOUT_MS must not be greater than REQUEST_TIMEOUT_MS/],
    [{ WINDSOCK_EPHEMERAL: 'maybe' }, /WINDSOCK_EPHEMERAL must be true or false/],
    [{ WINDSOCK_EPHEMERAL: 'true', DATABASE_URL: 'postgres://db/x' }, /WINDSOCK_EPHEMERAL keeps everything in memory: unset DATABASE_URL/],
    [{ WINDSOCK_EPHEMERAL: 'true', DATA_DIR: '/srv/windsock' }, /unset DATA_DIR/],
    [{ WINDSOCK_CLOCK: 'tomorrow' }, /WINDSOCK_CLOCK must be "real", an ISO-8601 instant .* or an offset such as \+90s.*got "tomorrow"/],
    [{ WINDSOCK_CLOCK: '+90w' }, /WINDSOCK_CLOCK.*units s, m, h, d/],
    [{ WINDSOCK_CLOCK: '2026-01-01T09:00:00' }, /needs its time zone/],
    [{ WINDSOCK_CLOCK: '2026-02-30T09:00:00Z' }, /WINDSOCK_CLOCK/],
  ])('refuses %j naming the setting', (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });

  it('reads WINDSOCK_EPHEMERAL: everything in memory, nothing under DATA_DIR, a fresh secret each start', () => {
    const c = loadConfig({ WINDSOCK_EPHEMERAL: 'true' });
    expect(c).toMatchObject({ ephemeral: true, databaseKind: 'sqlite', databaseUrl: ':memory:' });
    expect(c.jwtSecret).toHaveLength(64);
    expect(loadConfig({ WINDSOCK_EPHEMERAL: 'true' }).jwtSecret).not.toBe(c.jwtSecret);
    expect(c.dataDir.startsWith(os.tmpdir())).toBe(true);
    expect(c.artifacts.dir.startsWith(c.dataDir)).toBe(true);
    expect(loadConfig({}).ephemeral).toBe(false);
  });

  it('reads WINDSOCK_CLOCK: real by default, an instant (frozen) or an offset', () => {
    expect(loadConfig({}).clock).toEqual({ kind: 'real' });
    expect(loadConfig({ WINDSOCK_CLOCK: 'real' }).clock).toEqual({ kind: 'real' });
    expect(loadConfig({ WINDSOCK_CLOCK: '2026-01-01T09:00:00Z' }).clock).toEqual({ kind: 'frozen', at: new Date('2026-01-01T09:00:00.000Z') });
    expect(loadConfig({ WINDSOCK_CLOCK: '2026-01-01T09:00:00.250+02:00' }).clock).toEqual({ kind: 'frozen', at: new Date('2026-01-01T07:00:00.250Z') });
    expect(loadConfig({ WINDSOCK_CLOCK: '2026-03-04' }).clock).toEqual({ kind: 'frozen', at: new Date('2026-03-04T00:00:00.000Z') });
    expect(parseClockMode('+90s')).toEqual({ kind: 'offset', ms: 90_000 });
    expect(parseClockMode('-2h')).toEqual({ kind: 'offset', ms: -7_200_000 });
    expect(parseClockMode('+3d')).toEqual({ kind: 'offset', ms: 259_200_000 });
    expect(parseClockMode('15m')).toEqual({ kind: 'offset', ms: 900_000 });
  });
});
