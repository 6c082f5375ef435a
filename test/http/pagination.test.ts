/**
 * The two page readers the list handlers share: what they ask the store for, the `Link` header
 * they set and the items they give back. Pure (a fake request and response; no store, no server).
 */
import { countedPage, uncountedPage } from '../../src/http/responses/pagination';

const publicUrl = 'https://ci.example.com';

function listRequest(query: { page?: number; per_page?: number }) {
  const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return { query, originalUrl: `/v2/things${search ? `?${search}` : ''}`, baseUrl: '/v2', path: '/things' };
}

function headerRecorder() {
  const headers = new Map<string, string>();
  return { headers, res: { setHeader: (name: string, value: string) => headers.set(name, value) } };
}

/** A store read that notes what it was asked for (offset, limit) and answers `answer`. */
function recordedRead<T>(answer: T) {
  const asked: [number, number][] = [];
  const read = async (offset: number, limit: number) => {
    asked.push([offset, limit]);
    return answer;
  };
  return { asked, read };
}

describe('countedPage', () => {
  it('reads the page, links first, prev, next and last from the total, and gives the items back as read', async () => {
    const { headers, res } = headerRecorder();
    const { asked, read } = recordedRead({ items: ['c', 'd'], total: 7 });
    const items = await countedPage(listRequest({ page: 2, per_page: 2 }), res, publicUrl, read);
    expect(asked).toEqual([[2, 2]]);
    expect(items).toEqual(['c', 'd']);
    expect(headers.get('Link')).toBe(
      [
        '<https://ci.example.com/v2/things?page=1&per_page=2>; rel="first"',
        '<https://ci.example.com/v2/things?page=1&per_page=2>; rel="prev"',
        '<https://ci.example.com/v2/things?page=3&per_page=2>; rel="next"',
        '<https://ci.example.com/v2/things?page=4&per_page=2>; rel="last"',
      ].join(', '),
    );
  });

  it('sets no Link on the only page', async () => {
    const { headers, res } = headerRecorder();
    const items = await countedPage(listRequest({}), res, publicUrl, async () => ({ items: ['a'], total: 1 }));
    expect(items).toEqual(['a']);
    expect(headers.has('Link')).toBe(false);
  });
});

describe('uncountedPage', () => {
  it('reads one row past the page, links next when it came back, and drops it', async () => {
    const { headers, res } = headerRecorder();
    const { asked, read } = recordedRead(['a', 'b', 'c']);
    const items = await uncountedPage(listRequest({ page: 1, per_page: 2 }), res, publicUrl, read);
    expect(asked).toEqual([[0, 3]]);
    expect(items).toEqual(['a', 'b']);
    expect(headers.get('Link')).toBe('<https://ci.example.com/v2/things?page=2&per_page=2>; rel="next"');
  });

  it('links no next when the extra row did not come back (the last page), and no last (no total)', async () => {
    const { headers, res } = headerRecorder();
    const items = await uncountedPage(listRequest({ page: 3, per_page: 2 }), res, publicUrl, async () => ['e', 'f']);
    expect(items).toEqual(['e', 'f']);
    expect(headers.get('Link')).toBe(
      ['<https://ci.example.com/v2/things?page=1&per_page=2>; rel="first"', '<https://ci.example.com/v2/things?page=2&per_page=2>; rel="prev"'].join(', '),
    );
  });
});
