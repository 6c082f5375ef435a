/**
 * `buildkite-agent meta-data set KEY [VALUE] | set-batch KEY=VALUE... | get KEY [--default V] |
 * exists KEY | keys`, as the real agent behaves: `set` reads the value from stdin when it is not
 * given and refuses a blank key or value (`set-batch` splits each pair on its first `=` and sets
 * them all or none); reads go through `--build` (`BUILDKITE_METADATA_BUILD_ID`) when given, else the
 * job; `get` prints the value without a newline, or on a 404 the `--default` when one was given
 * (even empty), else fails; `exists` exits 0 when the key is set and 100 when not; `keys` prints
 * one key a line. Uses `pipedStdin` and `railsPathEscape` from ./annotate.ts.
 */
export const META_DATA = String.raw`
const META_DATA_USAGE = 'buildkite-agent meta-data <set KEY [VALUE] | set-batch KEY=VALUE... | get KEY [--default V] | exists KEY | keys> [--job ID] [--build ID]';
commands['meta-data'] = async (argv) => {
  const env = process.env;
  const [sub, ...rest] = argv;
  const { values, positionals } = shimArgs(
    rest,
    {
      default: { type: 'string' },
      job: { type: 'string', default: env.BUILDKITE_JOB_ID || '' },
      build: { type: 'string', default: env.BUILDKITE_METADATA_BUILD_ID || '' },
    },
    META_DATA_USAGE,
  );
  const job = values.job || jobCredentials().job;
  const reads = values.build ? '/builds/' + railsPathEscape(values.build) : '/jobs/' + railsPathEscape(job);
  const key = positionals[0];
  const needKey = (max) => {
    if (key === undefined || positionals.length > max) fail('usage: ' + META_DATA_USAGE, 2);
    if (!key.trim()) fail('the key is blank');
  };
  if (sub === 'set') {
    needKey(2);
    const value = positionals.length > 1 ? positionals[1] : pipedStdin();
    if (value === undefined) fail('no value given: pass it after the key or on stdin');
    if (!value.trim()) fail('the value is blank');
    const what = 'setting meta-data ' + key;
    await expectOk(await agentApi('/jobs/' + railsPathEscape(job) + '/data/set', { method: 'POST', body: { key, value }, what }), what);
  } else if (sub === 'set-batch') {
    if (!positionals.length) fail('usage: buildkite-agent meta-data set-batch KEY=VALUE...', 2);
    const items = positionals.map((pair) => {
      const at = pair.indexOf('=');
      if (at < 0) fail('not KEY=VALUE: ' + pair, 2);
      const [k, v] = [pair.slice(0, at), pair.slice(at + 1)];
      if (!k.trim() || !v.trim()) fail('a blank key or value: ' + pair);
      return { key: k, value: v };
    });
    const what = 'setting meta-data ' + items.map((i) => i.key).join(', ');
    await expectOk(await agentApi('/jobs/' + railsPathEscape(job) + '/data/set-batch', { method: 'POST', body: { items }, what }), what);
  } else if (sub === 'get') {
    needKey(1);
    const what = 'getting meta-data ' + key;
    const res = await agentApi(reads + '/data/get', { method: 'POST', body: { key }, what });
    if (res.status === 404 && values.default !== undefined) {
      process.stderr.write('buildkite-agent: meta-data ' + key + ' is not set: printing the default\n');
      process.stdout.write(values.default);
      return;
    }
    process.stdout.write((await expectOk(res, what)).value);
  } else if (sub === 'exists') {
    needKey(1);
    const what = 'checking meta-data ' + key;
    const body = await expectOk(await agentApi(reads + '/data/exists', { method: 'POST', body: { key }, what }), what);
    if (!body.exists) process.exit(100);
  } else if (sub === 'keys') {
    if (positionals.length) fail('usage: ' + META_DATA_USAGE, 2);
    const what = 'listing meta-data keys';
    const keys = await expectOk(await agentApi(reads + '/data/keys', { method: 'POST', what }), what);
    process.stdout.write(keys.map((k) => k + '\n').join(''));
  } else {
    fail('usage: ' + META_DATA_USAGE, 2);
  }
};
`;
