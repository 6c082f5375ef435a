/**
 * `buildkite-agent artifact upload <globs> | download <query> <dir> | shasum <query>`, as the
 * real agent's commands behave against Windsock storage:
 * - upload: `;`-separated globs (`**` any directories, `*` and `?` within a name, expanded here
 *   since the shim has no node_modules), relative to the working directory (absolute ones are
 *   recorded relative to `/`), in batches of 30: register, POST each file as the answered form
 *   (no token: the form is signed), report each `finished` or `error`. No match: nothing is sent.
 * - download: the build's finished artifacts matching the query (`*` crosses `/`), newest of
 *   each path, optionally of one step (`--step` key, label or job id), each fetched from its
 *   signed URL into a temporary file (checked against the stored SHA-256) renamed into place under
 *   the directory.
 * - shasum: the stored SHA-1 (`--sha256`: SHA-256) of the one artifact the query finds.
 */
export const ARTIFACT = String.raw`
const ARTIFACT_USAGE = 'usage: buildkite-agent artifact upload <paths> | download <query> <destination> [--step KEY] | shasum [--sha256] <query> [--step KEY]';
function artifactArgs(argv, flags) {
  const positional = [];
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const [name, inline] = a.slice(2).split(/=(.*)/s);
    if (!(name in flags)) fail('unknown flag --' + name + '\n' + ARTIFACT_USAGE, 2);
    if (flags[name] === 'bool') opts[name] = inline === undefined ? true : inline !== 'false';
    else if (inline !== undefined) opts[name] = inline;
    else if (i + 1 < argv.length) opts[name] = argv[++i];
    else fail('--' + name + ' needs a value', 2);
  }
  return { positional, opts };
}
function globRegExp(pattern) {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*' && pattern[i + 1] === '*') {
      i++;
      if (pattern[i + 1] === '/') {
        i++;
        re += '(?:.*/)?';
      } else re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^$(){}|[\]\\]/g, '\\$&');
  }
  return new RegExp('^' + re + '$', 's');
}
/** Files (not directories) under dir, as absolute paths; symlinked directories are not followed. */
function walk(dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const full = require('node:path').join(dir, e.name);
    if (e.isDirectory()) walk(full, out);
    else if (e.isFile()) out.push(full);
    else if (e.isSymbolicLink()) {
      try {
        if (fs.statSync(full).isFile()) out.push(full);
      } catch {}
    }
  }
  return out;
}
/** The files a pattern names: [absolute path, the artifact's path]. */
function globFiles(pattern) {
  const path = require('node:path');
  const cwd = process.cwd();
  const absolute = path.isAbsolute(pattern);
  const norm = pattern.replace(/^(\.\/)+/, '');
  const label = (abs) => (absolute ? abs.replace(/^\/+/, '') : path.relative(cwd, abs)).split(path.sep).join('/');
  if (!/[*?]/.test(norm)) {
    const abs = path.resolve(cwd, norm);
    try {
      return fs.statSync(abs).isFile() ? [[abs, label(abs)]] : [];
    } catch {
      return [];
    }
  }
  const segments = norm.split('/');
  const firstGlob = segments.findIndex((s) => /[*?]/.test(s));
  const base = path.resolve(cwd, segments.slice(0, firstGlob).join('/') || '.');
  const re = globRegExp(norm);
  return walk(base, [])
    .map((abs) => [abs, absolute ? abs : path.relative(cwd, abs).split(path.sep).join('/')])
    .filter(([, candidate]) => re.test(candidate))
    .map(([abs]) => [abs, label(abs)]);
}
function hashFile(file) {
  const crypto = require('node:crypto');
  return new Promise((resolve, reject) => {
    const sha1 = crypto.createHash('sha1');
    const sha256 = crypto.createHash('sha256');
    let size = 0;
    fs.createReadStream(file)
      .on('data', (b) => {
        size += b.length;
        sha1.update(b);
        sha256.update(b);
      })
      .on('error', reject)
      .on('end', () => resolve({ size, sha1: sha1.digest('hex'), sha256: sha256.digest('hex') }));
  });
}
async function uploadForm(instructions, artifact) {
  const url = new URL(instructions.action.url);
  url.pathname = instructions.action.path;
  const placeholder = '$' + '{artifact:path}';
  for (let attempt = 1; ; attempt++) {
    const form = new FormData();
    for (const [k, v] of Object.entries(instructions.data || {})) form.append(k, String(v).split(placeholder).join(artifact.path));
    form.append(instructions.action.file_input, await fs.openAsBlob(artifact.abs), artifact.path);
    const res = await fetch(url, { method: instructions.action.method || 'POST', body: form }).catch((err) => ({ ok: false, status: 0, text: async () => err.message }));
    if (res.ok) return null;
    const reason = (await res.text().catch(() => '')).slice(0, 500) + ' (' + res.status + ')';
    if ((res.status && res.status < 500) || attempt >= 3) return reason;
    await new Promise((r) => setTimeout(r, 1000 * attempt));
  }
}
async function artifactUpload(argv) {
  const { positional, opts } = artifactArgs(argv, { job: 'value', 'content-type': 'value', delimiter: 'value' });
  if (positional.length < 1) fail(ARTIFACT_USAGE, 2);
  if (positional[1]) fail('upload destinations are not supported: Windsock stores artifacts itself');
  const { job: envJob } = jobCredentials();
  const job = opts.job || envJob;
  const seen = new Set();
  const files = [];
  for (const pattern of positional[0].split(opts.delimiter || ';').map((p) => p.trim()).filter(Boolean)) {
    for (const [abs, path] of globFiles(pattern)) {
      if (seen.has(abs)) continue;
      seen.add(abs);
      files.push({ abs, path });
    }
  }
  if (files.length === 0) {
    process.stdout.write('buildkite-agent: No files matched paths: ' + positional[0] + '\n');
    return;
  }
  let failed = 0;
  for (let i = 0; i < files.length; i += 30) {
    const chunk = files.slice(i, i + 30);
    for (const f of chunk) Object.assign(f, await hashFile(f.abs));
    const what = 'registering artifacts';
    const res = await agentApi('/jobs/' + encodeURIComponent(job) + '/artifacts', {
      method: 'POST',
      what,
      body: {
        id: require('node:crypto').randomUUID(),
        artifacts: chunk.map((f) => ({
          path: f.path,
          absolute_path: f.abs,
          glob_path: '',
          file_size: f.size,
          sha1sum: f.sha1,
          sha256sum: f.sha256,
          ...(opts['content-type'] ? { content_type: opts['content-type'] } : {}),
        })),
        upload_destination: '',
        multipart_supported: false,
      },
    });
    const batch = await expectOk(res, what);
    const states = [];
    for (let j = 0; j < chunk.length; j++) {
      const id = batch.artifact_ids[j];
      const instructions = (batch.per_artifact_instructions || {})[id] || batch.upload_instructions;
      const error = await uploadForm(instructions, chunk[j]);
      if (error) {
        failed++;
        process.stderr.write('buildkite-agent: uploading ' + chunk[j].path + ' failed: ' + error + '\n');
      } else process.stdout.write('buildkite-agent: uploaded ' + chunk[j].path + ' (' + chunk[j].size + ' bytes)\n');
      states.push({ id, state: error ? 'error' : 'finished' });
    }
    const report = 'reporting artifact states';
    await expectOk(await agentApi('/jobs/' + encodeURIComponent(job) + '/artifacts', { method: 'PUT', body: { artifacts: states }, what: report }), report);
  }
  if (failed) fail(failed + ' of ' + files.length + ' artifacts failed to upload');
}
async function artifactSearch(query, opts) {
  const build = opts.build || process.env.BUILDKITE_BUILD_ID;
  if (!build) fail('--build or BUILDKITE_BUILD_ID must be set');
  const params = new URLSearchParams({ query, state: 'finished' });
  if (opts.step) params.set('scope', opts.step);
  if (opts['include-retried-jobs'] || process.env.BUILDKITE_AGENT_INCLUDE_RETRIED_JOBS === 'true') params.set('include_retried_jobs', 'true');
  const what = 'searching artifacts';
  return expectOk(await agentApi('/builds/' + encodeURIComponent(build) + '/artifacts/search?' + params, { what }), what);
}
/** Where an artifact goes under dest: its path's parts without .. or empty ones; dest's last part is not repeated. */
function downloadTarget(dest, artifactPath) {
  const path = require('node:path');
  const parts = artifactPath.split('/').filter((p) => p !== '' && p !== '.' && p !== '..');
  const destParts = path.resolve(dest).split(path.sep);
  if (parts.length > 1 && destParts[destParts.length - 1] === parts[0]) destParts.pop();
  return path.join(destParts.join(path.sep) || path.sep, ...parts);
}
async function artifactDownload(argv) {
  const { positional, opts } = artifactArgs(argv, { step: 'value', build: 'value', 'include-retried-jobs': 'bool' });
  if (positional.length !== 2) fail(ARTIFACT_USAGE, 2);
  const [query, dest] = positional;
  let isDir = false;
  try {
    isDir = fs.statSync(dest).isDirectory();
  } catch {}
  if (!isDir) fail('the destination ' + dest + ' is not a directory');
  const found = await artifactSearch(query, opts);
  if (found.length === 0) fail('no artifacts found for downloading');
  const path = require('node:path');
  let failed = 0;
  for (const a of found) {
    const target = downloadTarget(dest, a.path);
    const temp = target + '.' + process.pid + '.part';
    try {
      const res = await fetch(a.url);
      if (!res.ok || !res.body) throw new Error('GET ' + a.path + ': ' + res.status);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      // Streamed to a temporary file, hashed on the way, renamed into place only when the hash is the stored one.
      const hash = require('node:crypto').createHash('sha256');
      const { Readable, Transform } = require('node:stream');
      const tee = new Transform({ transform: (chunk, _enc, cb) => (hash.update(chunk), cb(null, chunk)) });
      await require('node:stream/promises').pipeline(Readable.fromWeb(res.body), tee, fs.createWriteStream(temp));
      const sum = hash.digest('hex');
      if (a.sha256sum && sum !== a.sha256sum) throw new Error(a.path + ': the SHA-256 of what was downloaded (' + sum + ') is not the stored one');
      fs.renameSync(temp, target);
      process.stdout.write('buildkite-agent: downloaded ' + a.path + ' to ' + target + '\n');
    } catch (err) {
      failed++;
      fs.rmSync(temp, { force: true });
      process.stderr.write('buildkite-agent: ' + err.message + '\n');
    }
  }
  if (failed) fail('there were errors downloading ' + failed + ' of ' + found.length + ' artifacts');
}
async function artifactShasum(argv) {
  const { positional, opts } = artifactArgs(argv, { step: 'value', build: 'value', sha256: 'bool', 'include-retried-jobs': 'bool' });
  if (positional.length !== 1) fail(ARTIFACT_USAGE, 2);
  const found = await artifactSearch(positional[0], opts);
  if (found.length === 0) fail('No artifacts matched the search query');
  if (found.length > 1) fail('Multiple artifacts were found. Try being more specific with the search or scope by step');
  const a = found[0];
  if (opts.sha256 && !a.sha256sum) fail('SHA-256 requested but was not generated at upload time');
  process.stdout.write((opts.sha256 ? a.sha256sum : a.sha1sum) + '\n');
}
commands.artifact = async (argv) => {
  const [sub, ...rest] = argv;
  if (sub === 'upload') return artifactUpload(rest);
  if (sub === 'download') return artifactDownload(rest);
  if (sub === 'shasum') return artifactShasum(rest);
  fail(ARTIFACT_USAGE, 2);
};
`;
