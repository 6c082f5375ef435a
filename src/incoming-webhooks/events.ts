/**
 * What a provider delivery means for builds, whichever provider sent it: the provider modules
 * (github.ts, gitlab.ts, bitbucket.ts) turn payloads into these, and service.ts applies the
 * pipeline's settings to them. Also a small reader for untrusted payloads that turns a missing
 * or mistyped field into a 400 naming it.
 */
import type { Author } from '../builds/model';
import { BadRequestError } from '../core/errors';
import { fieldOf } from '../core/guards';

export type ProviderFamily = 'github' | 'gitlab' | 'bitbucket';

export const PROVIDER_NAMES: Record<ProviderFamily, string> = { github: 'GitHub', gitlab: 'GitLab', bitbucket: 'Bitbucket' };

export interface PushEvent {
  kind: 'push';
  ref: { type: 'branch' | 'tag'; name: string };
  deleted: boolean;
  commit: string;
  message: string | null;
  author: Author | null;
}

/** Pull requests, and GitLab merge requests, with the action in GitHub's words. */
export interface PullRequestEvent {
  kind: 'pull_request';
  /** What the provider calls it, for messages: `pull request`, or GitLab's `merge request`. */
  noun: string;
  /** opened, reopened, synchronize, ready_for_review, labeled, unlabeled, or the provider's own word for anything else. */
  action: string;
  id: string;
  title: string | null;
  draft: boolean;
  commit: string;
  headBranch: string;
  /** Owner of the head repository, for `owner:branch` fork branch names. */
  headOwner: string | null;
  /** Clone URL (or full name) of the head repository. */
  headRepository: string | null;
  fork: boolean;
  /** How the fork is named in messages (`owner/repo`). */
  forkName: string | null;
  baseBranch: string;
  labels: string[];
  /** The label a `labeled` or `unlabeled` action added or removed (GitHub's); null otherwise. */
  label: string | null;
  author: Author | null;
  /** GitHub's: the pull request is closed or merged (`pull_request.state`), for skip_builds_for_closed_pull_requests. */
  closed?: boolean;
}

export interface DeploymentEvent {
  kind: 'deployment';
  commit: string;
  branch: string;
  message: string | null;
  author: Author | null;
}

export interface ForkEvent {
  kind: 'fork';
  branch: string;
  message: string;
  author: Author | null;
}

export interface PingEvent {
  kind: 'ping';
}

/** An event that never builds (issues, stars, closed merge requests...): named so the answer can say so. */
export interface OtherEvent {
  kind: 'other';
  name: string;
}

export type DeliveryEvent = PushEvent | PullRequestEvent | DeploymentEvent | ForkEvent | PingEvent | OtherEvent;

// Limits of the build fields these become (the Build schema's maxLength).
const NAME_MAX = 255;
const MESSAGE_MAX = 65536;

/**
 * Dotted paths into a payload type, to five levels (arrays end a path): with the provider's
 * published payload types (@octokit/webhooks-types) a misspelt field is a compile error.
 */
type Paths<T, Depth extends unknown[] = []> = Depth['length'] extends 5
  ? never
  : T extends readonly unknown[]
    ? never
    : T extends object
      ? { [K in keyof T & string]: K | `${K}.${Paths<NonNullable<T[K]>, [...Depth, unknown]>}` }[keyof T & string]
      : never;

/** Any string for untyped payloads (GitLab, Bitbucket), the type's paths otherwise. */
type P<T> = unknown extends T ? string : Paths<T>;

/**
 * Read-only access to an untrusted JSON payload by dotted path, own properties only. `T` is the
 * payload's published type when there is one; the values are still checked at run time, since a
 * delivery may be anything.
 */
export class Payload<T = unknown> {
  constructor(
    private readonly what: string,
    private readonly root: unknown,
  ) {}

  get(path: P<T>): unknown {
    let node: unknown = this.root;
    for (const key of String(path).split('.')) {
      if (typeof node !== 'object' || node === null || !Object.prototype.hasOwnProperty.call(node, key)) return undefined;
      node = fieldOf(node, key);
    }
    return node;
  }

  /** A present, non-empty string (a ref, a commit, a branch name): else 400 naming the field. */
  ref(path: P<T>): string {
    const v = this.get(path);
    if (typeof v !== 'string' || v === '') throw this.malformed(path, 'is missing');
    if (v.length > NAME_MAX) throw this.malformed(path, `is longer than ${NAME_MAX} characters`);
    return v;
  }

  /** A string when present (null, absent and other types read as null), cut to the field's limit. */
  text(path: P<T>, max = NAME_MAX): string | null {
    const v = this.get(path);
    return typeof v === 'string' ? v.slice(0, max) : null;
  }

  message(path: P<T>): string | null {
    return this.text(path, MESSAGE_MAX);
  }

  flag(path: P<T>): boolean {
    return this.get(path) === true;
  }

  /** An id that providers send as a number (GitHub, GitLab) or a string. */
  id(path: P<T>): string {
    const v = this.get(path);
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
    if (typeof v === 'string' && v !== '' && v.length <= 100) return v;
    throw this.malformed(path, 'is missing');
  }

  list(path: P<T>): unknown[] {
    const v = this.get(path);
    return Array.isArray(v) ? v : [];
  }

  /** Names from a list of objects (`labels[].name`), at most as many as a build keeps. */
  names(path: P<T>, key: string): string[] {
    return this.list(path)
      .map((item) => fieldOf(item, key))
      .filter((n): n is string => typeof n === 'string')
      .slice(0, 100)
      .map((n) => n.slice(0, NAME_MAX));
  }

  /** A child object as its own payload (e.g. one change of a Bitbucket push). */
  child<C = unknown>(path: P<T>): Payload<C> {
    return new Payload<C>(this.what, this.get(path));
  }

  malformed(path: P<T>, problem: string): BadRequestError {
    return new BadRequestError(`Malformed ${this.what} payload: ${path} ${problem}`);
  }
}

/** An author with only the fields that are there; null when none is. */
export function author(fields: { name?: string | null; email?: string | null; username?: string | null }): Author | null {
  const a: Author = {};
  if (fields.name) a.name = fields.name;
  if (fields.email) a.email = fields.email;
  if (fields.username) a.username = fields.username;
  return Object.keys(a).length ? a : null;
}

/** `refs/heads/x` and `refs/tags/x`; null for other refs (notes, merge refs...). */
export function splitRef(ref: string): { type: 'branch' | 'tag'; name: string } | null {
  if (ref.startsWith('refs/heads/') && ref.length > 11) return { type: 'branch', name: ref.slice(11) };
  if (ref.startsWith('refs/tags/') && ref.length > 10) return { type: 'tag', name: ref.slice(10) };
  return null;
}

/** Git's null object id: what a push of a deleted ref points to. */
export function isNullCommit(sha: string | null): boolean {
  return sha !== null && /^0+$/.test(sha);
}
