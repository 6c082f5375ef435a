/**
 * The web interface: HTML pages at the paths the representations' `web_url`s name (organization
 * `/{org}`, pipeline `/{org}/{pipeline}`, build `/{org}/{pipeline}/builds/{n}` with jobs as
 * `#{job-id}`, agents under `/organizations/{org}/agents`, suites under
 * `/organizations/{org}/analytics/suites`), sign-in and sign-out, and the hashed assets.
 *
 * Pages answer only requests that ask for HTML (a browser's `Accept`), form posts, and the
 * log endpoints the log script calls; anything else goes on to the API, so a JSON client still
 * gets JSON (a 404 included). Pages call the services with the signed-in token's principal.
 */
import crypto from 'node:crypto';
import express, { NextFunction, Request, Response, Router } from 'express';
import { DomainError, ForbiddenError, IpNotAllowedError, RateLimitedError, UnauthorizedError } from '../core/errors';
import { ipAllowed } from '../security/allowed-ips';
import { domainErrorAnswer, type ErrorAnswer } from '../http/middleware/error-handler';
import type { OperationId } from '../http/contract/operation';
import { countFailedAuthentication } from '../http/middleware/rate-limit';
import { clock } from '../core/clock';
import type { Principal } from '../core/identity';
import { loadAssets, type Assets } from './assets';
import { actorFor, guardOperation, scopesOf, type WebDeps } from './context';
import { html } from './html';
import { csrfTokenOf, sameSecret, SESSION_MS } from './sessions';
import { layout, notice, type PageContext } from './ui';
import { registerBuildPages } from './pages/builds';
import { registerLivePages } from './live';
import { registerOrganizationPages } from './pages/organization';
import { registerAgentPages } from './pages/agents';
import { registerSuitePages } from './pages/suites';
import { registerPipelineSettingsPages } from './pages/pipeline-settings';
import { signInPage } from './pages/sign-in';
import { loadSpec } from '../spec';
import { isRecord, stringField } from '../core/guards';

export const SESSION_COOKIE = 'windsock_session';
const SIGNIN_COOKIE = 'windsock_signin';

/**
 * First path segments that are never an organization's page: every first segment of the API's
 * own paths (read from the contract, so a path it gains later, like `/artifact-content/{id}`
 * that a browser opens from a download link, is never taken for `/:org/:pipeline`), and the
 * other owners' paths outside it.
 */
const OUTSIDE_CONTRACT = ['docs', 'metrics', 'badges', 'uploads', 'organizations', 'login', 'logout', 'favicon.ico', 'robots.txt'];
let reserved: Set<string> | undefined;
function reservedSegments(): Set<string> {
  if (!reserved) {
    const specPaths = loadSpec().doc.paths;
    const paths = isRecord(specPaths) ? Object.keys(specPaths) : [];
    reserved = new Set([...OUTSIDE_CONTRACT, ...paths.map((p) => p.split('/')[1] ?? '').filter((s) => s !== '' && !s.startsWith('{'))]);
  }
  return reserved;
}
export function isReservedSegment(segment: string): boolean {
  return reservedSegments().has(segment) || segment.startsWith('_') || segment.startsWith('openapi');
}

/**
 * The pages' policy; images may also come from the artifacts origin or bucket (annotations embed
 * `artifact://` images) and from the origins a page names (an organization's custom emojis).
 */
export function pagePolicy(contentOrigins: readonly string[], imageOrigins: readonly string[] = []): string {
  const images = ["'self' data:", ...contentOrigins, ...imageOrigins.filter((o) => /^https?:\/\/[\w.:[\]-]+$/.test(o))].join(' ');
  return `default-src 'self'; script-src 'self'; style-src 'self'; img-src ${images}; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`;
}

function cookies(req: Request): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.get('cookie') ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out.set(part.slice(0, i).trim(), decodeURIComponent(part.slice(i + 1).trim()));
  }
  return out;
}

function wantsHtml(req: Request): boolean {
  return /\btext\/html\b/.test(req.get('accept') ?? '');
}

function isForm(req: Request): boolean {
  return req.is('application/x-www-form-urlencoded') === 'application/x-www-form-urlencoded';
}

/** A same-path redirect target only: `/x`, never `//host` or `https://…`. */
export function safeNext(next: unknown): string | null {
  return typeof next === 'string' && /^\/(?![/\\])/.test(next) ? next : null;
}

export interface WebRequest {
  req: Request;
  res: Response;
  ctx: PageContext;
  principal: Principal;
  /** The session's id (a secret: never logged, never sent back). */
  sid: string;
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  body: Record<string, unknown>;
}

export type PageHandler = (w: WebRequest) => Promise<string>;
/** A form shown again in answer to a post (its input kept, each error beside its field), with the API's status for the error. */
export interface ShownAgain {
  status: number;
  page: string;
}
/** Answers where to go next (a redirect after a successful post), or the form again. */
export type ActionHandler = (w: WebRequest) => Promise<string | ShownAgain>;
export type JsonHandler = (w: WebRequest) => Promise<void>;

/**
 * Each route names the API operation it stands for: before its handler runs, the path's
 * organization must be one the token reaches (a 404 otherwise) and the token must pass that
 * operation's scope guard (the API's 403), in the API's order.
 */
export interface WebRouter {
  page(path: string, operation: OperationId, handler: PageHandler): void;
  action(path: string, operation: OperationId, handler: ActionHandler): void;
  /** Neither a page nor a post: the log script's JSON and the raw log (signed-in, any Accept). */
  data(path: string, operation: OperationId, handler: JsonHandler): void;
  deps: WebDeps;
}

/**
 * The API's checks of `operation` at its edge, in its order (`guardRouter`): the organization in
 * the path (404), the organization's API IP allow-list (403: a session is the API's token in a
 * cookie, so it reaches nothing the token could not), then the scopes (403).
 */
async function guard(w: WebRequest, operation: OperationId, deps: WebDeps): Promise<void> {
  if (w.params.org !== undefined) {
    const { organization } = actorFor(w.principal, w.params.org);
    const allowed = await deps.organizations.allowedIpAddresses(organization.id);
    if (allowed && !ipAllowed(allowed, w.req.ip)) throw new IpNotAllowedError(w.req.ip ?? 'unknown');
  }
  guardOperation(w.principal, operation);
}

export function webRoutes(deps: WebDeps, assets: Assets = loadAssets()): Router {
  const router = express.Router();
  // OPTIONS belongs to the API (CORS preflights, `Allow` from the spec): leaving before any route
  // matches keeps Express from answering it with the pages' methods (`/:org` would claim any path).
  router.use((req, _res, next) => next(req.method === 'OPTIONS' ? 'router' : undefined));
  const sessions = deps.webSessions;
  const secure = deps.publicUrl.startsWith('https:');
  const publicOrigin = new URL(deps.publicUrl).origin;
  const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, secure, path: '/' };
  router.use(assets.router);
  // Browsers that ask for the icon before reading the page's `<link rel=icon>` get the same one.
  router.get('/favicon.ico', (_req, res) => res.redirect(301, assets.url('favicon.svg')));

  const csp = pagePolicy(deps.artifacts.contentOrigins);
  const secureHeaders = (res: Response) => {
    const images: unknown = res.locals.imageOrigins;
    const extra = Array.isArray(images) ? images.filter((o): o is string => typeof o === 'string') : [];
    res.setHeader('Content-Security-Policy', extra.length ? pagePolicy(deps.artifacts.contentOrigins, extra) : csp);
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    res.setHeader('Cache-Control', 'no-store');
  };
  const send = (res: Response, status: number, body: string) => {
    secureHeaders(res);
    res.status(status).type('html').send(body);
  };

  const baseContext = (req: Request, principal: Principal | null, csrf: string): PageContext => {
    const org = String(req.params.org ?? '');
    return { principal, csrf, assets, orgSlug: org && principal?.organizationsBySlug.has(org) ? org : undefined, path: req.originalUrl };
  };

  /**
   * A domain error's answer by the API's table (http/error-handler.ts): the same status and
   * headers as the API gives it. A client error is the page's to explain; a server error, or an
   * error that is no domain error, is the app's error handler's.
   */
  const answerTo = (e: unknown): ErrorAnswer | null => {
    const answer = e instanceof DomainError ? domainErrorAnswer(e) : undefined;
    return answer && answer.status < 500 ? answer : null;
  };
  /** The API's answer, as a page: a title for its status, its message (and a validation error's fields). */
  const explain = (answer: ErrorAnswer): { title: string; message: string } => {
    if (answer.status === 404) return { title: 'Not found', message: 'There is nothing here, or your token does not reach it.' };
    const errors = answer.body.errors;
    const fields = Array.isArray(errors) ? errors.flatMap((f: unknown) => fieldError(f) ?? []) : [];
    const message = fields.length ? `${answer.body.message}: ${fields.map((f) => `${f.field} ${f.code}`).join('; ')}` : answer.body.message;
    const title =
      answer.status === 403 ? 'Not allowed' : answer.status === 401 ? 'Not signed in' : answer.status === 429 ? 'Too many requests' : 'Not accepted';
    return { title, message };
  };
  const errorPage = (res: Response, ctx: PageContext, e: unknown, next: NextFunction) => {
    const answer = answerTo(e);
    if (!answer) return next(e);
    const known = explain(answer);
    for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
    send(
      res,
      answer.status,
      layout(
        ctx,
        known.title,
        html`<h1>${known.title}</h1>
          ${notice(known.message, 'error')}
          <p><a href="${ctx.orgSlug ? `/${ctx.orgSlug}` : '/login'}">Back to the start</a></p>`,
      ),
    );
  };

  /** The signed-in principal and session id, or null. */
  const signedIn = async (req: Request): Promise<{ principal: Principal; sid: string } | null> => {
    const sid = cookies(req).get(SESSION_COOKIE);
    if (!sid || sid.length > 100) return null;
    const principal = await sessions.principal(sid);
    return principal ? { principal, sid } : null;
  };

  const orgPathIsOurs = (req: Request) => req.params.org === undefined || !isReservedSegment(String(req.params.org));
  const webRequest = (req: Request, res: Response, principal: Principal, sid: string): WebRequest => ({
    req,
    res,
    principal,
    sid,
    ctx: baseContext(req, principal, csrfTokenOf(sid)),
    // cast: the pages' routes name their parameters (no wildcards), each one string.
    params: req.params as Record<string, string>,
    query: Object.fromEntries(Object.entries(req.query).map(([k, v]) => [k, typeof v === 'string' ? v : undefined])),
    body: isRecord(req.body) ? req.body : {},
  });

  const countFailed = countFailedAuthentication(deps.rateLimiter);
  // A pipeline's steps may be 262,144 characters (the API's limit), up to three times that once form-encoded.
  const urlencoded = express.urlencoded({ extended: false, limit: '1mb', parameterLimit: 200 });

  const web: WebRouter = {
    deps,
    page(path, operation, handler) {
      scopesOf(operation);
      router.get(path, async (req, res, next) => {
        if (!wantsHtml(req) || !orgPathIsOurs(req)) return next();
        const session = await signedIn(req);
        if (!session) return res.redirect(303, `/login?next=${encodeURIComponent(req.originalUrl)}`);
        const w = webRequest(req, res, session.principal, session.sid);
        try {
          await guard(w, operation, deps);
          send(res, 200, await handler(w));
        } catch (e) {
          errorPage(res, w.ctx, e, next);
        }
      });
    },
    action(path, operation, handler) {
      scopesOf(operation);
      router.post(path, async (req, res, next) => {
        if (!isForm(req) || !orgPathIsOurs(req)) return next();
        await new Promise<void>((resolve, reject) => urlencoded(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
        const session = await signedIn(req);
        if (!session) return res.redirect(303, `/login?next=${encodeURIComponent(req.originalUrl)}`);
        const w = webRequest(req, res, session.principal, session.sid);
        try {
          checkOrigin(req);
          const token = typeof w.body._csrf === 'string' ? w.body._csrf : '';
          if (!sameSecret(token, w.ctx.csrf)) throw new ForbiddenError();
          await guard(w, operation, deps);
          const outcome = await handler(w);
          if (typeof outcome === 'string') res.redirect(303, outcome);
          else send(res, outcome.status, outcome.page);
        } catch (e) {
          errorPage(res, w.ctx, e, next);
        }
      });
    },
    data(path, operation, handler) {
      scopesOf(operation);
      router.get(path, async (req, res, next) => {
        if (!orgPathIsOurs(req)) return next();
        const session = await signedIn(req);
        if (!session) {
          res.status(401).json({ message: 'Sign in first' });
          return;
        }
        const w = webRequest(req, res, session.principal, session.sid);
        try {
          res.setHeader('Cache-Control', 'no-store');
          res.setHeader('X-Content-Type-Options', 'nosniff');
          await guard(w, operation, deps);
          await handler(w);
        } catch (e) {
          // The API's answer exactly: status, headers and JSON body.
          const answer = answerTo(e);
          if (!answer || res.headersSent) return next(e);
          for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
          res.status(answer.status).json(answer.body);
        }
      });
    },
  };

  /** A post from another site is refused even before its CSRF token is read. */
  const checkOrigin = (req: Request) => {
    const origin = req.get('origin');
    if (origin && origin !== publicOrigin && origin !== `${req.protocol}://${req.get('host')}`) throw new ForbiddenError();
  };

  // Sign-in: the form carries a random value that must match its cookie (a login form has no session to derive a CSRF token from).
  router.get('/login', async (req, res, next) => {
    if (!wantsHtml(req)) return next();
    const session = await signedIn(req);
    const nextPath = safeNext(req.query.next);
    if (session) {
      const target = nextPath ?? firstOrgPath(session.principal);
      if (target) return res.redirect(303, target);
      const ctx = baseContext(req, session.principal, csrfTokenOf(session.sid));
      return send(
        res,
        200,
        layout(
          ctx,
          'No organization',
          html`<h1>No organization</h1>
            ${notice('Your token reaches no organization: sign out and sign in with another token.')}`,
        ),
      );
    }
    const csrf = cookies(req).get(SIGNIN_COOKIE) ?? crypto.randomUUID();
    res.cookie(SIGNIN_COOKIE, csrf, { ...cookieOptions, maxAge: 3600_000 });
    send(res, 200, signInPage({ principal: null, csrf, assets, path: req.originalUrl }, nextPath, undefined));
  });
  router.post('/login', urlencoded, async (req, res, next) => {
    const body = isRecord(req.body) ? req.body : {};
    const nextPath = safeNext(body.next);
    const expected = cookies(req).get(SIGNIN_COOKIE);
    const ctx: PageContext = { principal: null, csrf: expected ?? '', assets, path: req.originalUrl };
    try {
      checkOrigin(req);
      if (!expected || typeof body._csrf !== 'string' || !sameSecret(body._csrf, expected)) throw new ForbiddenError();
    } catch (e) {
      return errorPage(res, ctx, e, next);
    }
    const token = typeof body.token === 'string' ? body.token.trim() : '';
    let created: { sid: string; expiresAt: Date };
    try {
      if (!token || token.length > 4096) throw new UnauthorizedError('empty token');
      created = await sessions.create(token);
    } catch (e) {
      if (!(e instanceof UnauthorizedError)) return next(e);
      // A refused token counts against the address like one refused by the API, and over the budget the form is refused too.
      return countFailed(e, req, res, (outcome?: unknown) => {
        if (outcome instanceof RateLimitedError) {
          res.setHeader('Retry-After', String(outcome.resetSeconds));
          return send(res, 429, signInPage(ctx, nextPath, outcome.message));
        }
        send(res, 401, signInPage(ctx, nextPath, 'That token was not accepted: it is unknown, expired or revoked.'));
      });
    }
    res.clearCookie(SIGNIN_COOKIE, cookieOptions);
    res.cookie(SESSION_COOKIE, created.sid, { ...cookieOptions, maxAge: Math.min(SESSION_MS, created.expiresAt.getTime() - clock.nowMs()) });
    const principal = (await sessions.principal(created.sid))!;
    // The signed-in user's pending invitations are accepted (a user invited after they were made):
    // they join those organizations, which their next token may then name.
    await deps.db.transaction((trx) => deps.invitations.acceptFor(principal.user, trx));
    res.redirect(303, nextPath ?? firstOrgPath(principal) ?? '/login');
  });
  router.post('/logout', urlencoded, async (req, res, next) => {
    const session = await signedIn(req);
    if (session) {
      const ctx = baseContext(req, session.principal, csrfTokenOf(session.sid));
      try {
        checkOrigin(req);
        const body = isRecord(req.body) ? req.body : {};
        if (typeof body._csrf !== 'string' || !sameSecret(body._csrf, ctx.csrf)) throw new ForbiddenError();
      } catch (e) {
        return errorPage(res, ctx, e, next);
      }
      await sessions.destroy(session.sid);
    }
    res.clearCookie(SESSION_COOKIE, cookieOptions);
    res.redirect(303, '/login');
  });

  registerAgentPages(web);
  registerSuitePages(web);
  registerPipelineSettingsPages(web);
  registerOrganizationPages(web);
  registerBuildPages(web);
  registerLivePages(web, deps.liveStreams);
  return router;
}

function firstOrgPath(principal: Principal): string | null {
  const first = [...principal.organizationsBySlug.keys()].sort()[0];
  return first ? `/${first}` : null;
}

/** An entry of a validation error's `errors` (src/core/errors.ts FieldError): its field and code, when it has both. */
function fieldError(f: unknown): { field: string; code: string } | undefined {
  const field = stringField(f, 'field');
  const code = stringField(f, 'code');
  return field !== undefined && code !== undefined ? { field, code } : undefined;
}
