/**
 * `buildkite-agent pipeline upload [file]`: reads the file given, else stdin when it is a pipe or
 * a file, else `.buildkite/pipeline.yml` (or `.yaml`, or `buildkite.yml`) in the working
 * directory, and posts it under one upload id for every attempt, so the server adds the steps once.
 */
export const PIPELINE = String.raw`
const PIPELINE_DEFAULTS = ['.buildkite/pipeline.yml', '.buildkite/pipeline.yaml', 'buildkite.yml', 'buildkite.yaml'];
function pipelineSource(file) {
  if (file !== undefined && file !== '-') return [file, fs.readFileSync(file, 'utf8')];
  const stdin = fs.fstatSync(0);
  if (file === '-' || stdin.isFIFO() || stdin.isFile()) return ['(stdin)', fs.readFileSync(0, 'utf8')];
  const found = PIPELINE_DEFAULTS.find((f) => fs.existsSync(f));
  if (!found) fail('no pipeline file given and none of ' + PIPELINE_DEFAULTS.join(', ') + ' exists');
  return [found, fs.readFileSync(found, 'utf8')];
}
commands.pipeline = async (argv) => {
  if (argv[0] !== 'upload' || argv.length > 2) fail('usage: buildkite-agent pipeline upload [file]', 2);
  const { job } = jobCredentials();
  let name, text;
  try {
    [name, text] = pipelineSource(argv[1]);
  } catch (err) {
    fail(err.message);
  }
  const what = 'uploading ' + name;
  const res = await agentApi('/jobs/' + encodeURIComponent(job) + '/pipelines', { method: 'POST', body: { pipeline: text, uuid: require('node:crypto').randomUUID() }, what });
  const body = await expectOk(res, what);
  process.stdout.write('buildkite-agent: uploaded ' + name + ' (' + body.jobs.length + ' jobs)\n');
};
`;
