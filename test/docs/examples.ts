/**
 * The curl examples of the README and the docs/ pages it moved to, read as a shell would read
 * them (test/docs/curl-examples.test.ts sends every one; test/http/query-parameters.test.ts
 * sends the GET ones exactly as written).
 */
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/**
 * The pages whose examples are run: the README and every page under docs/ and docs/api/, so a
 * page added there is run without being listed.
 */
export const EXAMPLE_PAGES = [
  'README.md',
  ...['docs', 'docs/api'].flatMap((dir) =>
    fs
      .readdirSync(path.join(ROOT, dir))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => `${dir}/${f}`),
  ),
];

/** Paths outside the spec that examples call (no operation to match; they must still answer below 500 and not 415). */
export const OUTSIDE_SPEC = [/^\/metrics$/, /^\/docs$/, /^\/login$/, /^\/badges\/[^/]+\.(svg|json)$/];

export interface Example {
  page: string;
  line: number;
  text: string;
  method: string;
  url: string;
  headers: [string, string][];
  json?: string;
  form?: [string, string][];
}

/** Splits a shell command into words (quotes, escapes, $VAR and ${VAR} expansion) up to the first unquoted | ; & > or #. */
function shellWords(command: string, vars: (name: string) => string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let i = 0;
  const add = (s: string) => (word = (word ?? '') + s);
  const variable = (): string => {
    if (command.startsWith('$(', i)) {
      // A command's output (`$(git rev-parse HEAD)`, an id read with jq): a placeholder.
      let depth = 0;
      i++;
      do {
        if (command[i] === '(') depth++;
        else if (command[i] === ')') depth--;
        i++;
      } while (depth > 0 && i < command.length);
      return '{SUBST}';
    }
    // $NAME, ${NAME}, and ${NAME%suffix} (the value without that suffix).
    const m = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?:%([^}]*))?\}/.exec(command.slice(i)) ?? /^\$([A-Za-z_][A-Za-z0-9_]*)/.exec(command.slice(i));
    if (!m) {
      i++;
      return '$';
    }
    i += m[0].length;
    const value = vars(m[1]!);
    return m[2] && value.endsWith(m[2]) ? value.slice(0, -m[2].length) : value;
  };
  while (i < command.length) {
    const c = command[i]!;
    if (c === "'") {
      // An unterminated quote (prose, not a command) runs to the end of the line.
      const end = command.indexOf("'", i + 1) === -1 ? command.length : command.indexOf("'", i + 1);
      add(command.slice(i + 1, end));
      i = end + 1;
    } else if (c === '"') {
      i++;
      let s = '';
      while (i < command.length && command[i] !== '"') {
        if (command[i] === '\\' && '"\\$`'.includes(command[i + 1]!)) {
          s += command[i + 1];
          i += 2;
        } else if (command[i] === '$') s += variable();
        else s += command[i++];
      }
      add(s);
      i++;
    } else if (c === '\\') {
      add(command[i + 1]!);
      i += 2;
    } else if (c === '$') add(variable());
    else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
      i++;
    } else if ('|;&>)'.includes(c) || (c === '#' && word === undefined)) break;
    else add(command[i++]!);
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** The page's sh blocks with continuation lines joined, each line with its line number in the page. */
function shellLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  const lines = text.split('\n');
  let inBlock = false;
  for (let n = 0; n < lines.length; n++) {
    const l = lines[n]!;
    if (/^\s*```/.test(l)) {
      inBlock = !inBlock && /^\s*```(sh|bash|shell)?\s*$/.test(l);
      continue;
    }
    if (!inBlock) continue;
    let joined = l;
    const start = n;
    while (joined.endsWith('\\') && n + 1 < lines.length) joined = `${joined.slice(0, -1)} ${lines[++n]!.trim()}`;
    out.push({ line: start + 1, text: joined.trim() });
  }
  return out;
}

/** Every curl command of a page, parsed; `vars` expands what the page's exports do not define. */
export function curlExamples(page: string, given: Record<string, string>): Example[] {
  const text = fs.readFileSync(path.join(ROOT, page), 'utf8');
  const defined: Record<string, string> = {};
  const vars = (name: string): string => given[name] ?? defined[name] ?? `{${name}}`;
  const examples: Example[] = [];
  for (const { line, text: command } of shellLines(text)) {
    const assignment = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)=("[^"]*"|'[^']*'|[^\s(`]\S*)(\s|$)/.exec(command);
    if (assignment && !command.includes('$(')) {
      const name = assignment[1]!;
      if (!(name in given)) defined[name] = shellWords(assignment[2]!, vars)[0] ?? '';
    }
    // Every curl of the line: at its start, after `until`, or inside $( ... ) (a value read from an answer).
    for (const m of command.matchAll(/(?:^|\$\(|\buntil\s+|\bthen\s+|&&\s*)(?=curl\s)/g)) {
      const rest = command.slice(m.index + m[0].length);
      const words = shellWords(rest, vars).slice(1);
      const ex: Example = { page, line, text: rest, method: 'GET', url: '', headers: [] };
      let explicitMethod: string | undefined;
      for (let w = 0; w < words.length; w++) {
        const word = words[w]!;
        const flags = /^-([a-zA-Z]+)$/.exec(word)?.[1];
        if (flags) {
          // Combined short flags (-sX POST, -sLH "..."): the last one takes the next word.
          const last = flags.at(-1)!;
          if (flags.includes('I')) explicitMethod = 'HEAD';
          if (last === 'X') explicitMethod = words[++w]!;
          else if (last === 'H') {
            const h = words[++w]!;
            ex.headers.push([h.slice(0, h.indexOf(':')).trim(), h.slice(h.indexOf(':') + 1).trim()]);
          } else if (last === 'd') ex.json = words[++w]!;
          else if (last === 'F') (ex.form ??= []).push(words[++w]!.split(/=(.*)/s).slice(0, 2) as [string, string]);
          else if (last === 'o') w++;
        } else if (word === '--data' || word === '--data-raw') ex.json = words[++w]!;
        else if (word === '--header') {
          const h = words[++w]!;
          ex.headers.push([h.slice(0, h.indexOf(':')).trim(), h.slice(h.indexOf(':') + 1).trim()]);
        } else if (!word.startsWith('-') && !ex.url) ex.url = word;
      }
      ex.method = explicitMethod ?? (ex.json !== undefined || ex.form ? 'POST' : 'GET');
      examples.push(ex);
    }
  }
  return examples;
}
