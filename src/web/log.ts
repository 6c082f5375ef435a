/**
 * The log renderer the build pages use: it lives with the jobs (builds/jobs/log-html.ts) because
 * the REST API serves the same HTML (`.../log.html`, `Accept: text/html`).
 */
export { renderLog } from '../builds/jobs/log-html';
