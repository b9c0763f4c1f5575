// corpus.mjs: the tokenizer test corpus, the same strings on every run (a
// fixed seed): hand-picked hard cases, then random mixes of fragments of many
// scripts, emoji, combining marks, whitespace, numbers, code, contractions
// and special-token strings. Shared by make_fixtures.mjs and bench_oracle.mjs.

export function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const words = [
  'Hello', 'world', 'the', 'The', 'THE', 'tokenizer', 'reinforcement', 'fine-tuning', 'a', 'I',
  'Größe', 'Straße', 'déjà', 'vu', 'naïve', 'façade', 'crème', 'brûlée', '¿Qué', 'tal?', '¡Hola!',
  'Привет', 'мир', 'ЁЖИК', 'Καλημέρα', 'κόσμε', 'ΣΊΣΥΦΟΣ', 'مرحبا', 'بالعالم', 'שלום', 'עולם',
  'नमस्ते', 'दुनिया', 'আমার', 'সোনার', 'வணக்கம்', 'สวัสดีชาวโลก', 'ສະບາຍດີ', '你好', '世界',
  '中文分词测试', '自然言語処理', 'こんにちは', 'カタカナ', 'ﾊﾝｶｸ', '안녕하세요', '세계', 'Tiếng',
  'Việt', 'có', 'dấu', 'გამარჯობა', 'Բարեւ', 'ሰላም', 'ᠮᠣᠩᠭᠣᠯ', 'བོད་ཡིག', 'ꦗꦮ', 'ᏣᎳᎩ',
  'İstanbul', 'ıi', 'ǅemal', 'ﬁnance', 'Ａｌｐｈａ', '𝕳𝖊𝖑𝖑𝖔', '𐍈𐌰𐌹', 'Ωmega', 'µs',
];
const emoji = [
  '😀', '👍', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇺🇸', '🇯🇵', '🧑🏿‍💻', '❤️', '1️⃣', '🤷‍♀️', '👩🏻‍🦰',
  '✌🏿', '🫠', '🪿', '©️', '™', '☃', '⚡', '🎉🎉🎉', '🏴󠁧󠁢󠁳󠁣󠁴󠁿',
];
// decomposed forms and marks that NFC changes (or must not)
const marks = [
  'e\u0301', 'a\u0308', 'A\u030a', 'o\u0323\u0302', 'o\u0302\u0323', '\u1100\u1161\u11a8',
  '\u1100\u1161', '\uac00\u11a8', '\u212b', '\u2126', '\u0958', '\u1e9b\u0323', 'q\u0307\u0323',
  'a\u0301\u0328', 'u\u0308\u0304', '\u0041\u030a\u0301', 'ạ̈', 'Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f',
  '\u0cc6\u0cc2\u0cd5', '\u0b47\u0b3e', '\u09c7\u09be', '\u0dd9\u0dcf\u0dca', '\u0344', '\u0f73',
  '\u0340\u0341', 'i\u0307', '\u00c5\u0301', '\u1fbf\u0301', 'x\u0338', '=\u0338', '<\u0338',
  '\u3099\u304b', '\u304b\u3099', '\u30cf\u309a', '\uff76\uff9e', 'n\u0303\u0303\u0303', '\u05d1\u05bc',
  '\ufb2c', '\u0627\u0653', '\u0928\u093c', '\u0915\u093c', 'e\u20dd', '\u0301', '\u0301\u0301a',
];
const spaces = [
  ' ', '  ', '   ', '\t', '\n', '\r\n', '\r', '\n\n\n', ' \n ', '\t\t\n', '\u00a0', '\u2000', '\u2003',
  '\u2009', '\u200a', '\u3000', '\u2028', '\u2029', '\u0085', '\ufeff', '\u200b', '\u180e',
  '\u202f', '\u205f', '\u1680', '\u000b', '\u000c', ' \u00a0 ', '\r\n\r\n', ' \r\n', '\n ',
];
const numbers = [
  '0', '7', '42', '123', '2024', '12345', '1234567', '3.14159', '1,000,000', '-17', '+3e10',
  '٣٤٥', '१२३', '১২৩', 'Ⅻ', 'ⅷ', '½', '²', '①', '٠١٢٣٤٥٦٧٨٩', '0x1F', '1st', '2nd', '10%',
];
const code = [
  'def f(x):\n    return x**2\n', 'int main(void) { return 0; }', 'for (i = 0; i < n; i++) {',
  '<div class="a">', 'x => x + 1', "SELECT * FROM t WHERE a='b';", '#include <stdio.h>',
  '```python\nprint("hi")\n```', '{"a": [1, 2], "b": null}', 'https://example.com/a?b=c&d=e#f',
  'user@example.org', 'C:\\Users\\x\\file.txt', '/usr/bin/env python3', '    indented\n\tline',
  'a_b_c = foo->bar[3];', '$x = @{$y};', 'if x != y and not z:', '// comment\n/* block */',
  '\\begin{equation} E = mc^2 \\end{equation}', '<?xml version="1.0"?>', 'ls -la | grep "^d"',
];
const contractions = [
  "I'm", "don't", "they're", "we've", "he'll", "she'd", "it's", "IT'S", "WE'LL", "YOU'RE", "I'D",
  "'S", "'LL", "'Ll", "'sT", "rock'n'roll", '’s', "''", "'''", "O'Neil", "'re'", "'t'", "' s",
  "'ſ", "'K", "DON'T", "WOULDN'T'VE", "'M", "'VE", "'Re", "x'd", "1's", "'",
];
const specials = [
  '<|endoftext|>', '<|begin_of_text|>', '<|end_of_text|>', '<|eot_id|>', '<|im_start|>',
  '<|im_end|>', '<|reserved_special_token_5|>', '<|fim_prefix|>', '<|file_sep|>', '<|repo_name|>',
  '<|im_start', '<|endoftext', '<||>', '<|endoftext|><|endoftext|>', ' <|im_start|>user\n',
  '<|start_header_id|>', '<|end_header_id|>', '<|vision_pad|>', '<|endoftext|>>', '<<|im_end|>',
];
const odd = [
  '\ufffd', '\uffff', '\ufdd0', '\u{10ffff}', '\u0000', '\u0001\u001f', '\u007f', '\u0080\u009f',
  '\ue000', '\u{f0000}', '\u{e0001}', '\u{1d11e}', '\u200d', '\u034f', '\u00ad', '\u2060', '\u061c',
  '\u202e', '∑∫√∞≠≤', '→⇒↔', '┌─┐│└┘', '…', '—–', '«»', '„“”', '¡¿', '§¶†‡', '°C', '€£¥₹',
];
const punct = ['.', ',', '!', '?', ';', ':', '...', '!!!', '?!', '--', '---', '==', '()', '[]', '{}',
  '"', '"quoted"', '#', '@', '&', '*', '**bold**', '_', '~', '`', '|', '\\', '/', '%', '^'];

const pools = [words, words, words, emoji, marks, spaces, spaces, numbers, code, contractions,
  specials, odd, punct, punct];

const hand = [
  '', ' ', '  ', '\n', '\r\n', ' Hello', 'Hello ', 'Hello  ', ' Hello world ', 'Hello\n\nworld',
  'a\r\nb', 'a \r\n b', 'trailing spaces   ', '   leading', '\t\ttabs\tinside\t',
  "I'm sure it's fine, isn't it? They'll say we'd've known.", "HE'S HERE. SHE'LL GO. WE'RE DONE.",
  'Numbers: 1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890',
  '<|endoftext|>', 'Hello<|endoftext|>world', 'a <|endoftext|> b', '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>',
  'e\u0301cole', 'école', 'Ame\u0301lie', '\u1100\u1161\u11a8\u1100\u1161', 'ﬁ ﬂ ﬃ', 'Å Å Å',
  '👨‍👩‍👧‍👦 family', '👍🏽👍🏿', '🇺🇸🇬🇧🇯🇵', 'x\u00a0y', 'x\u3000y', 'x\u0085y', 'x\ufeffy', 'x\u2028y',
  ' \u00a0Hello', '\u00a0\u00a0', '\n\n\n\n', '    \n', ' \n\n ', 'a' + ' '.repeat(40) + 'b',
  '0'.repeat(50), '9'.repeat(7) + ' ' + '8'.repeat(11), 'ab'.repeat(300), '你'.repeat(200),
  'Zalgo: Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c\u030c\u0358\u0328\u0335\u0339\u033b\u031d\u0333',
  'Mixed 中文 and English 混合 text 123 测试', '日本語のテキスト、句読点。「括弧」',
  "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D", 'can\'t won\'t shan\'t', '\u0000\u0000',
  '\uffff\ufffe', 'tab\there', 'a\u000bb\u000cc', '\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a',
];

// The corpus: hand-picked strings, then count - hand.length random ones.
export function makeCorpus(count = 3000, seed = 20240611) {
  const rnd = mulberry32(seed);
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const out = [...hand];
  for (const pool of pools) for (const s of pool) out.push(s);
  while (out.length < count) {
    const long = rnd() < 0.02;
    const n = long ? 100 + Math.floor(rnd() * 300) : 1 + Math.floor(rnd() * 10);
    let s = '';
    for (let i = 0; i < n; i++) {
      let f = pick(pick(pools));
      const r = rnd();
      if (r < 0.08) f = f.toUpperCase();
      else if (r < 0.12) f = f.toLowerCase();
      s += f;
      const sep = rnd();
      if (sep < 0.55) s += ' ';
      else if (sep < 0.62) s += pick(spaces);
      else if (sep < 0.7) s += pick(punct);
    }
    if (rnd() < 0.15) s = ' ' + s;
    if (rnd() < 0.1) s += '  ';
    out.push(s);
  }
  // strings with lone surrogates cannot be UTF-8 (toUpperCase never makes them; a check all the same)
  return out.slice(0, count).filter((s) => s.isWellFormed());
}
