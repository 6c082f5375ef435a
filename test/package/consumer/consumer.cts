// The same consumer as CommonJS (the `require` condition of windsock/client).
import { createClient, paginate, WindsockApiError } from 'windsock/client';
import { scenario } from './scenario.js';

const [baseUrl, token] = process.argv.slice(2);
scenario(createClient({ baseUrl: baseUrl!, token: token! }), paginate, WindsockApiError, 'Consumer CJS').then(
  (report) => console.log(JSON.stringify({ ...report, build: { number: report.build.number, state: report.build.state }, loadedAs: 'commonjs' })),
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
