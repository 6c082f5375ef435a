/** Signing in to the web interface with supertest: an agent that keeps the session cookie, and pages read as a browser asks for them. */
import request from 'supertest';
import type { Express } from 'express';

export const HTML = { Accept: 'text/html' };

export function csrfOf(body: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(body);
  if (!m) throw new Error('no CSRF token on the page');
  return m[1]!;
}

/** The version of what a settings form showed (it carries it back, so a stale form is refused). */
export function versionOf(body: string): string {
  const m = /name="version" value="([^"]+)"/.exec(body);
  if (!m) throw new Error('no version on the form');
  return m[1]!;
}

/** A supertest agent signed in with `token`. */
export async function signedIn(app: Express, token: string) {
  const agent = request.agent(app);
  const form = await agent.get('/login').set(HTML).expect(200);
  await agent
    .post('/login')
    .type('form')
    .send({ _csrf: csrfOf(form.text), token })
    .expect(303);
  return agent;
}
