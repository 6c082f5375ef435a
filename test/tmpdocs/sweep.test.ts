import fs from 'node:fs';
import { codesOf } from '../support/configuration';
import { parseConfiguration } from '../../src/pipelines/configuration';

it('sweeps the docs pipeline.yml blocks', () => {
  const blocks = JSON.parse(fs.readFileSync('/tmp/docyaml/blocks.json', 'utf8')) as { file: string; line: number; yaml: string }[];
  const out: unknown[] = [];
  for (const b of blocks) {
    let codes: string[] = [];
    let notices: string[] = [];
    try {
      codes = codesOf(b.yaml);
      if (codes.length === 0) notices = parseConfiguration(b.yaml).notices;
    } catch (e) {
      codes = [`THROW ${String(e)}`];
    }
    out.push({ at: `${b.file}:${b.line}`, codes, notices });
  }
  fs.writeFileSync('/tmp/docyaml/result.json', JSON.stringify(out, null, 1));
});
