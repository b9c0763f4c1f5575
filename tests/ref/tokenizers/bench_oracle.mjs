// bench_oracle.mjs: encode throughput of the reference tokenizer
// (@huggingface/tokenizers) on the corpus and files bench/bench_tokenizer.c
// uses, for comparison: one line per call, add_special_tokens false.
//   node bench_oracle.mjs [seconds per family, default 2]
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import { FAMILIES, fullDir } from './make_fixtures.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const FIXTURES = join(HERE, '../../fixtures/tokenizers');
const seconds = Number(process.argv[2] ?? 2);
const corpus = readFileSync(join(FIXTURES, 'corpus.jsonl'), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
const bytes = corpus.reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0);
console.log(`corpus: ${corpus.length} strings, ${(bytes / 1e6).toFixed(2)} MB`);
for (const family of Object.keys(FAMILIES)) {
  const full = existsSync(join(fullDir(family), 'tokenizer.json'));
  const dir = full ? fullDir(family) : join(FIXTURES, family);
  let t0 = performance.now();
  const tok = new Tokenizer(JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')),
    JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')));
  const load = (performance.now() - t0) / 1000;
  for (const s of corpus) tok.encode(s, { add_special_tokens: false }); // warm up the JIT
  let rounds = 0, ids = 0, elapsed;
  t0 = performance.now();
  do {
    for (const s of corpus) ids += tok.encode(s, { add_special_tokens: false }).ids.length;
    rounds++;
    elapsed = (performance.now() - t0) / 1000;
  } while (elapsed < seconds);
  console.log(`${family.padEnd(7)} ${(full ? 'full' : 'truncated').padEnd(9)} load ${load.toFixed(2)} s  ` +
    `encode ${(bytes * rounds / elapsed / 1e6).toFixed(2)} MB/s  (${(ids / elapsed).toFixed(0)} ids/s)`);
}
