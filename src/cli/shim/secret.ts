/**
 * `buildkite-agent secret get KEY... [--format default|json|env] [--job ID]`, as the real agent
 * behaves: each key (case-insensitive) is read through the agent API for the job
 * (`GET /jobs/{job}/secrets?key=KEY`); with one key and the default format the value is printed
 * alone, with several (or `--format json`) a JSON object by key, with `--format env` one
 * `KEY='value'` line per key, upper-cased and sorted. Any failure fails the command and names
 * every key that failed. The reference agent has no log redactor (the real agent's Job API), so
 * `--skip-redaction` is accepted and changes nothing: a value printed to the log is in the log.
 */
export const SECRET = String.raw`
const SECRET_USAGE = 'buildkite-agent secret get [--format default|json|env] [--job ID] [--skip-redaction] KEY...';
commands.secret = async (argv) => {
  const env = process.env;
  const [sub, ...rest] = argv;
  if (sub !== 'get') fail('usage: ' + SECRET_USAGE, 2);
  const { values, positionals } = shimArgs(
    rest,
    {
      format: { type: 'string', default: env.BUILDKITE_AGENT_SECRET_GET_FORMAT || 'default' },
      job: { type: 'string', default: env.BUILDKITE_JOB_ID || '' },
      'skip-redaction': { type: 'boolean' },
    },
    SECRET_USAGE,
  );
  if (!positionals.length) fail('at least one secret key must be provided', 2);
  if (!['default', 'json', 'env'].includes(values.format)) fail('invalid format "' + values.format + '": must be one of \'default\', \'json\', or \'env\'', 2);
  const job = values.job || jobCredentials().job;
  const found = [];
  const errors = [];
  for (const key of positionals) {
    const res = await agentApi('/jobs/' + railsPathEscape(job) + '/secrets?key=' + encodeURIComponent(key), { what: 'getting secret ' + key });
    const body = await res.json().catch(() => ({}));
    if (res.ok) found.push({ key, value: body.value });
    else errors.push(key + ': ' + res.status + ' ' + (body.message || ''));
  }
  if (errors.length) fail('Failed to fetch some secrets:\n' + errors.map((e) => ' - ' + e).join('\n'));
  if (positionals.length === 1 && values.format === 'default') {
    process.stdout.write(found[0].value + '\n');
  } else if (values.format === 'env') {
    const quote = (s) => "'" + s.replace(/'/g, "'\\''") + "'";
    for (const s of [...found].sort((a, b) => (a.key < b.key ? -1 : 1))) process.stdout.write(s.key.toUpperCase() + '=' + quote(s.value) + '\n');
  } else {
    process.stdout.write(JSON.stringify(Object.fromEntries(found.map((s) => [s.key, s.value]))) + '\n');
  }
};
`;
