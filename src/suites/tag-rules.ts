/**
 * The Test Engine's tagging rules (tags.md, "Defining tags"), the one rule set for every way
 * tags come in: an upload's `tags` (applied to each of its executions), a result's own `tags`
 * (src/uploads/results.ts), and the mutable tags of the execution tags API. Mutable tags "are
 * identical to other tags" but for the reserved `mut.` prefix: they must have it ("Only tags
 * prefixed with `mut.` can be added to executions after upload"), the others must not ("cannot
 * be added in the initial upload"). The spec's UploadTags, ExecutionTags and MutableTags say the
 * same.
 */
import { isRecord } from '../core/guards';

/** At most this many tags per upload, per result, and mutable ones per execution. */
export const MAX_TAGS = 10;
/** A letter, then letters, digits, `_`, `-` or `.`: under 64 bytes (the pattern is ASCII, so bytes are characters). */
const TAG_KEY = /^[A-Za-z][A-Za-z0-9_.-]{0,62}$/;
/** Under 128 bytes of UTF-8. */
const MAX_TAG_VALUE_BYTES = 127;
/** The reserved prefix of mutable tags (and the bare key `mut`, reserved too). */
export const MUTABLE_PREFIX = 'mut.';

/** `upload`: an upload's or a result's tags (no `mut.`); `mutable`: the execution tags API's (only `mut.`). */
export type TagKind = 'upload' | 'mutable';

/** One broken rule. `at`: the key it is about, once the key is known to be short and plain (null: the tags as a whole). */
export interface TagFault {
  at: string | null;
  code: string;
}

/** Whether `key` is one the rules let be a tag's (so one that can be stored). */
export const isTagKey = (key: string) => TAG_KEY.test(key);

/** Whether a key is reserved for mutable tags: `mut` and `mut.*` (`mutation` or `mutable.tag` are not). */
const reserved = (key: string) => key === 'mut' || key.startsWith(MUTABLE_PREFIX);

/** Every way `tags` break the rules for their kind, in key order; none when they keep them (null and undefined: no tags). */
export function tagFaults(tags: unknown, kind: TagKind): TagFault[] {
  if (tags === undefined || tags === null) return [];
  if (!isRecord(tags)) return [{ at: null, code: 'must be an object of tags, each a key and a string' }];
  const entries = Object.entries(tags);
  const faults: TagFault[] = [];
  if (entries.length > MAX_TAGS) faults.push({ at: null, code: `has too many tags (maximum is ${MAX_TAGS})` });
  for (const [key, value] of entries) {
    // A key goes into a field name only once it is known to be short and plain.
    if (!isTagKey(key)) {
      faults.push({ at: null, code: 'has a key that is not a tag key (a letter, then letters, digits, _, - or ., under 64 bytes)' });
      continue;
    }
    if (kind === 'upload' && reserved(key)) faults.push({ at: key, code: 'is reserved: mut. tags are set through the execution tags API' });
    else if (kind === 'mutable' && !key.startsWith(MUTABLE_PREFIX)) faults.push({ at: key, code: `must begin with the ${MUTABLE_PREFIX} prefix` });
    else if (kind === 'mutable' && key === MUTABLE_PREFIX) faults.push({ at: key, code: `must name a tag after the ${MUTABLE_PREFIX} prefix` });
    else if (typeof value !== 'string') faults.push({ at: key, code: 'must be a string' });
    else if (value.trim() === '') faults.push({ at: key, code: "can't be blank" });
    else if (Buffer.byteLength(value) > MAX_TAG_VALUE_BYTES) faults.push({ at: key, code: `is too long (maximum is ${MAX_TAG_VALUE_BYTES} bytes)` });
    else {
      const longer = keyUnder(Object.keys(tags), key);
      if (longer !== undefined) faults.push({ at: key, code: `is a dot-separated prefix of the key ${JSON.stringify(longer)}: one of them must go` });
    }
  }
  return faults;
}

/**
 * tags.md: a key "must not be a dot-separated prefix of another key" (`service` beside
 * `service.instance.id`). The first of `keys` that `key` is such a prefix of, if any.
 */
export function keyUnder(keys: readonly string[], key: string): string | undefined {
  return keys.find((other) => other.startsWith(`${key}.`));
}

/** A fault's field under `base` (`tags`, `executions[3].tags`): `base.key` when it is about one tag. */
export function tagFaultField(base: string, fault: TagFault): string {
  return fault.at === null ? base : `${base}.${fault.at}`;
}
