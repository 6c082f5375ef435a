/**
 * What every generated client's smoke scenario shares: its settings (from the environment the
 * test gives it) and the report it prints as JSON, which test/generators/clients.test.ts checks.
 */
export interface Report {
  /** Slugs of the organization's pipelines, first page. */
  listed: string[];
  /** Slug of the pipeline the scenario created. */
  created: string;
  build: { number: number; state: string };
  /** The number of the build read back. */
  got: number;
  /** Build numbers of `WINDSOCK_PIPELINE`, page by page (2 a page), following `Link: rel="next"`. */
  pages: number[][];
  /** A build with an empty branch: the typed 422. */
  invalid: { status: number; message: string; fields: string[] };
  /** A build that does not exist: the typed 404. */
  missing: { status: number; message: string };
}

export function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

export const settings = () => ({
  url: setting('WINDSOCK_URL'),
  token: setting('WINDSOCK_TOKEN'),
  org: setting('WINDSOCK_ORG'),
  pipeline: setting('WINDSOCK_PIPELINE'),
  name: setting('WINDSOCK_NEW_PIPELINE'),
});

/** The page number of the `rel="next"` link of a `Link` header, if there is one. */
export function nextPage(link: string | null | undefined): number | undefined {
  const next = /<([^>]+)>;\s*rel="next"/.exec(link ?? '')?.[1];
  const page = next ? new URL(next).searchParams.get('page') : null;
  return page ? Number(page) : undefined;
}

/**
 * The fields of a typed error body: a createBuild error is the API's error (with field errors) or
 * the rate limit's (without), and the type says so.
 */
export function fieldsOf(error: { message: string } | { message: string; errors?: { field: string }[] }): string[] {
  return 'errors' in error && error.errors ? error.errors.map((e) => e.field) : [];
}

export const MISSING_BUILD = 999999;
export const NEW_PIPELINE = { repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make test\n' };
export const NEW_BUILD = { commit: 'HEAD', branch: 'main', message: 'From a generated client' };

export function run(main: () => Promise<Report>): void {
  main().then(
    (report) => process.stdout.write(JSON.stringify(report)),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
