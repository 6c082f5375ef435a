/**
 * What a failed call throws: every 4xx or 5xx answer (after the 429 back-off gave up) becomes
 * a `WindsockApiError` with the service's own words: its `message`, and for a 422 the fields at
 * fault (`errors`).
 */

/** One field at fault in a 422 `Validation Failed` answer. */
export interface WindsockFieldError {
  /** The request field, e.g. `name` or `steps[1].command`. */
  field: string;
  /** A short reason a person can act on, e.g. `can't be blank`. */
  code: string;
}

export class WindsockApiError extends Error {
  override readonly name = 'WindsockApiError';

  constructor(
    /** The HTTP status (e.g. 404, 422, 429). */
    readonly status: number,
    message: string,
    /** The fields at fault (422 `Validation Failed`); empty otherwise. */
    readonly errors: WindsockFieldError[],
    /** The parsed JSON body, or its text when it was not JSON. */
    readonly body: unknown,
    /** The response itself (headers such as `Retry-After`, `RateLimit-*`, `X-Request-Id`). */
    readonly response: Response,
    /** `METHOD URL` of the request that failed. */
    readonly request: string,
  ) {
    super(message);
  }

  /** Reads a failed response into an error (the body is read from a clone: the response stays usable). */
  static async from(request: Request, response: Response): Promise<WindsockApiError> {
    const text = await response.clone().text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON (a proxy's HTML page, say): the text is the body.
    }
    const json = typeof body === 'object' && body !== null ? (body as { message?: unknown; errors?: unknown }) : {};
    const message = typeof json.message === 'string' ? json.message : `${response.status} ${response.statusText || 'error'}`;
    const errors = Array.isArray(json.errors) ? json.errors.filter(isFieldError) : [];
    return new WindsockApiError(response.status, message, errors, body, response, `${request.method} ${request.url}`);
  }
}

function isFieldError(e: unknown): e is WindsockFieldError {
  return typeof e === 'object' && e !== null && typeof (e as WindsockFieldError).field === 'string' && typeof (e as WindsockFieldError).code === 'string';
}
