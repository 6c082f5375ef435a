/**
 * `buildkite-agent pause [--note N] [--timeout-in-minutes M]`, `resume` and `stop [--force]`
 * from a job: the agent running the job pauses, resumes or stops itself through the agent API
 * (`POST /v3/pause|resume|stop`). A 422 (already paused, not paused, not connected) is not tried
 * again, as with the real agent.
 */
export const AGENT_CONTROL = String.raw`
const control = (path, done, usage, options, bodyOf) => async (argv) => {
  const { values, positionals } = shimArgs(argv, options, usage);
  if (positionals.length) fail('usage: ' + usage, 2);
  const what = path.slice(1) + ' the agent';
  await expectOk(await agentApi(path, { method: 'POST', body: bodyOf(values), what }), what);
  process.stdout.write('buildkite-agent: ' + done + '\n');
};
commands.pause = control(
  '/pause',
  'paused',
  'buildkite-agent pause [--note NOTE] [--timeout-in-minutes M]',
  { note: { type: 'string' }, 'timeout-in-minutes': { type: 'string' } },
  (v) => {
    const body = {};
    if (v.note !== undefined) body.note = v.note;
    if (v['timeout-in-minutes'] !== undefined) {
      if (!/^[0-9]+$/.test(v['timeout-in-minutes'])) fail('--timeout-in-minutes must be a whole number of minutes', 2);
      body.timeout_in_minutes = Number(v['timeout-in-minutes']);
    }
    return body;
  },
);
commands.resume = control('/resume', 'resumed', 'buildkite-agent resume', {}, () => ({}));
commands.stop = control('/stop', 'stopping', 'buildkite-agent stop [--force]', { force: { type: 'boolean' } }, (v) => (v.force ? { force: true } : {}));
`;
