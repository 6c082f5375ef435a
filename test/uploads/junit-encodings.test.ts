/**
 * JUnit files in the encoding their XML declaration (or byte order mark) names: a test called
 * `café` in an ISO-8859-1 file is stored as `café`, never as `caf\uFFFD`.
 */
import iconv from 'iconv-lite';
import { describeEachDatabase } from '../support/context';
import { givenSuite, suiteAuth } from './helpers';

const doc = (encoding: string | null, name = 'café au lait') =>
  `${encoding === null ? '' : `<?xml version="1.0" encoding="${encoding}"?>\n`}<testsuite name="drinks"><testcase classname="Menü" name="${name}" time="0.5"/></testsuite>`;

describeEachDatabase('uploads (JUnit encodings)', (ctx) => {
  const send = (apiToken: string, data: Buffer, key: string) =>
    ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(apiToken))
      .field('format', 'junit')
      .field('run_env[key]', key)
      .attach('data', data, { filename: 'junit.xml', contentType: 'application/xml' });

  const storedNames = async (suiteId: string) =>
    (await ctx().services.db('tests').where({ suite_id: suiteId }).orderBy('name').select('scope', 'name')).map((t) => `${t.scope} / ${t.name}`);

  it('decodes ISO-8859-1, windows-1252 and latin1 files as their declaration says', async () => {
    const s = await givenSuite(ctx());
    await send(s.apiToken, iconv.encode(doc('ISO-8859-1'), 'latin1'), 'iso').expect(202);
    // 0x80 is the euro sign in windows-1252 (a C1 control in ISO-8859-1).
    await send(s.apiToken, iconv.encode(doc('windows-1252', 'costs 5 €'), 'win1252'), 'cp1252').expect(202);
    await send(s.apiToken, iconv.encode(doc('latin1', 'naïve'), 'latin1'), 'latin1').expect(202);
    expect(await storedNames(s.suite.id)).toEqual(['Menü / café au lait', 'Menü / costs 5 €', 'Menü / naïve']);
  });

  it('decodes UTF-16 with a byte order mark (either byte order), UTF-8 with or without one, and no declaration as UTF-8', async () => {
    const s = await givenSuite(ctx());
    const bom = (enc: 'utf-16le' | 'utf-16be') => iconv.encode(doc('UTF-16', `${enc} ☕`), enc, { addBOM: true });
    await send(s.apiToken, bom('utf-16le'), 'le').expect(202);
    await send(s.apiToken, bom('utf-16be'), 'be').expect(202);
    await send(s.apiToken, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(doc('UTF-8', 'utf-8 bom ✓'))]), 'u8bom').expect(202);
    await send(s.apiToken, Buffer.from(doc(null, 'undeclared ✓')), 'plain').expect(202);
    expect(await storedNames(s.suite.id)).toEqual(['Menü / undeclared ✓', 'Menü / utf-16be ☕', 'Menü / utf-16le ☕', 'Menü / utf-8 bom ✓']);
  });

  it('refuses an encoding it does not know, and UTF-16 that cannot be told from its bytes, with a 422 naming data', async () => {
    const s = await givenSuite(ctx());
    const unknown = await send(s.apiToken, Buffer.from(doc('x-klingon-7')), 'klingon').expect(422);
    expect(unknown.body).toEqual({
      message: 'Validation Failed',
      errors: [{ field: 'data', code: expect.stringContaining('declares the encoding x-klingon-7, which is not supported') }],
    });
    const noBom = await send(s.apiToken, Buffer.from(doc('UTF-16')), 'nobom').expect(422);
    expect(noBom.body.errors).toEqual([{ field: 'data', code: expect.stringContaining('has no byte order mark') }]);
    expect(await storedNames(s.suite.id)).toEqual([]);
  });
});
