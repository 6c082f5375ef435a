/**
 * What every command of the `buildkite-agent` shim shares, as JavaScript source run by plain node
 * (the shim needs neither a build of Windsock nor anything installed): `fail`, the job's
 * credentials from its environment, and `agentApi`, a call to the agent API that tries a network
 * error or a 5xx again (three attempts in all) and never prints the token; `shimArgs` for flags.
 */
export const RUNTIME = String.raw`
const fail = (message, code = 1) => {
  process.stderr.write('buildkite-agent: ' + message + '\n');
  process.exit(code);
};
function jobCredentials() {
  const { BUILDKITE_AGENT_ACCESS_TOKEN: token, BUILDKITE_AGENT_ENDPOINT: endpoint, BUILDKITE_JOB_ID: job } = process.env;
  if (!token || !endpoint || !job) fail('BUILDKITE_AGENT_ACCESS_TOKEN, BUILDKITE_AGENT_ENDPOINT and BUILDKITE_JOB_ID must be set');
  return { token, endpoint: endpoint.replace(/\/$/, ''), job };
}
/** A call to the agent API (path under /v3): the response once it is not a 5xx, after up to three attempts. */
async function agentApi(path, { method = 'GET', body, headers = {}, what = path } = {}) {
  const { token, endpoint } = jobCredentials();
  const init = { method, headers: { Authorization: 'Token ' + token, ...headers } };
  if (body !== undefined) {
    if (typeof body === 'string' || body instanceof Uint8Array) init.body = body;
    else {
      init.body = JSON.stringify(body);
      init.headers['Content-Type'] = 'application/json';
    }
  }
  let res;
  for (let attempt = 1; ; attempt++) {
    res = await fetch(endpoint + path, init).catch((err) => (attempt < 3 ? null : fail(what + ' failed: ' + err.message)));
    if (res && res.status < 500) return res;
    if (attempt >= 3) return res;
    await new Promise((r) => setTimeout(r, 1000 * attempt));
  }
}
/** A command's flags and arguments (node:util parseArgs, strict); a bad one fails with the usage (exit 2). */
function shimArgs(argv, options, usage) {
  try {
    return require('node:util').parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    fail(err.message + '\nusage: ' + usage, 2);
  }
}
/** The JSON of a response that must be a success, else the command fails with the server's message and field errors. */
async function expectOk(res, what) {
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const details = (body.errors || []).map((e) => '\n  ' + e.field + ': ' + e.code).join('');
    fail(what + ' failed: ' + res.status + ' ' + (body.message || '') + details);
  }
  return body;
}
`;
