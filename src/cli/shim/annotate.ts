/**
 * `buildkite-agent annotate [body] [--style S] [--context C] [--append] [--priority N] [--scope build|job] [--job ID]`
 * and `buildkite-agent annotation remove [--context C] [--scope build|job] [--job ID]`, as the
 * real agent sends them: the body from the argument, else from stdin when it is a pipe or a
 * file, else none (which only restyles the annotation of that context); flags default from
 * `BUILDKITE_ANNOTATION_*` as the agent's do; the priority is always sent (3 unless given); a
 * body over 1 MiB is refused before sending. Path segments are escaped as the agent escapes them
 * (dots too, as `%2E`).
 */
export const ANNOTATE = String.raw`
const railsPathEscape = (s) => encodeURIComponent(s).replace(/\./g, '%2E');
/** stdin's text when it is a pipe or a file (not a terminal, not /dev/null), else undefined. */
function pipedStdin() {
  const stdin = fs.fstatSync(0);
  return stdin.isFIFO() || stdin.isFile() ? fs.readFileSync(0, 'utf8') : undefined;
}
const ANNOTATE_USAGE = 'buildkite-agent annotate [body] [--style success|info|warning|error] [--context C] [--append] [--priority 1-10] [--scope build|job] [--job ID]';
commands.annotate = async (argv) => {
  const env = process.env;
  const { values, positionals } = shimArgs(
    argv,
    {
      style: { type: 'string', default: env.BUILDKITE_ANNOTATION_STYLE || '' },
      context: { type: 'string', default: env.BUILDKITE_ANNOTATION_CONTEXT || '' },
      append: { type: 'boolean', default: ['true', '1'].includes(env.BUILDKITE_ANNOTATION_APPEND || '') },
      priority: { type: 'string', default: env.BUILDKITE_ANNOTATION_PRIORITY || '3' },
      scope: { type: 'string', default: env.BUILDKITE_ANNOTATION_SCOPE || 'build' },
      job: { type: 'string', default: env.BUILDKITE_JOB_ID || '' },
    },
    ANNOTATE_USAGE,
  );
  if (positionals.length > 1) fail('usage: ' + ANNOTATE_USAGE, 2);
  const body = positionals.length ? positionals[0] : pipedStdin();
  if (body !== undefined && Buffer.byteLength(body) > 1024 * 1024) fail('the annotation body is over 1 MiB (' + Buffer.byteLength(body) + ' bytes)');
  if (!/^\d+$/.test(values.priority)) fail('--priority must be a number from 1 to 10', 2);
  const job = values.job || jobCredentials().job;
  const annotation = { priority: Number(values.priority), scope: values.scope };
  if (body) annotation.body = body;
  if (values.context) annotation.context = values.context;
  if (values.style) annotation.style = values.style;
  if (values.append) annotation.append = true;
  const what = 'annotating the build';
  await expectOk(await agentApi('/jobs/' + railsPathEscape(job) + '/annotations', { method: 'POST', body: annotation, what }), what);
  process.stderr.write('buildkite-agent: annotated the ' + values.scope + ' (context ' + (values.context || 'default') + ')\n');
};
const REMOVE_USAGE = 'buildkite-agent annotation remove [--context C] [--scope build|job] [--job ID]';
commands.annotation = async (argv) => {
  const env = process.env;
  if (argv[0] !== 'remove') fail('usage: ' + REMOVE_USAGE, 2);
  const { values, positionals } = shimArgs(
    argv.slice(1),
    {
      context: { type: 'string', default: env.BUILDKITE_ANNOTATION_CONTEXT || 'default' },
      scope: { type: 'string', default: env.BUILDKITE_ANNOTATION_SCOPE || 'build' },
      job: { type: 'string', default: env.BUILDKITE_JOB_ID || '' },
    },
    REMOVE_USAGE,
  );
  if (positionals.length) fail('usage: ' + REMOVE_USAGE, 2);
  const job = values.job || jobCredentials().job;
  const what = 'removing the annotation ' + values.context;
  const path = '/jobs/' + railsPathEscape(job) + '/annotations/' + railsPathEscape(values.context) + '?scope=' + encodeURIComponent(values.scope);
  const res = await agentApi(path, { method: 'DELETE', what });
  if (res.status !== 204) await expectOk(res, what);
  process.stderr.write('buildkite-agent: removed the annotation ' + values.context + '\n');
};
`;
