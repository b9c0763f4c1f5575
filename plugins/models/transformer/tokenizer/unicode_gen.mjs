// unicode_gen.mjs: writes unicode_tables.c, the Unicode data of the BPE
// tokenizers (unicode.h), from node's own regex engine and normalizer, so
// that tern agrees with the JavaScript reference tokenizer it is tested
// against (tests/ref/tokenizers/):
//   - character classes of the pre-tokenizer patterns: \p{L}, \p{N},
//     \p{White_Space} (what the reference makes of \s in a Split pattern) and
//     JavaScript's own \s (used by the ByteLevel pre-tokenizer's regex);
//   - NFC: full canonical decompositions, canonical combining classes and the
//     primary composites (composition exclusions left out); Hangul is
//     algorithmic and not tabled.
// JavaScript exposes no combining class, so the generator derives it from
// String.prototype.normalize: a mark's class is nonzero when NFD reorders it
// against U+0316 (class 220) or U+0301 (230), and marks are ranked by how NFD
// orders them pairwise. NFC needs only the order of the classes and which are
// zero, so the rank stands in for the class value.
//
// Run: node plugins/models/transformer/tokenizer/unicode_gen.mjs
// (rewrites unicode_tables.c beside it)
// The tables are checked against normalize('NFC') before they are written.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MAX = 0x10ffff;
const isSurrogate = (cp) => cp >= 0xd800 && cp <= 0xdfff;
const isHangul = (cp) => cp >= 0xac00 && cp <= 0xd7a3;
const str = (cps) => String.fromCodePoint(...cps);
const cpsOf = (s) => Array.from(s, (c) => c.codePointAt(0));

// ---- character classes --------------------------------------------------
const L = /^\p{L}$/u, N = /^\p{N}$/u, WS = /^\p{White_Space}$/u, JS = /^\s$/u;
const classOf = (cp) => {
  if (isSurrogate(cp)) return 0;
  const s = String.fromCodePoint(cp);
  return (L.test(s) ? 1 : 0) | (N.test(s) ? 2 : 0) | (WS.test(s) ? 4 : 0) | (JS.test(s) ? 8 : 0);
};
const classRuns = [];
for (let cp = 0, prev = -1; cp <= MAX; cp++) {
  const b = classOf(cp);
  if (b !== prev) classRuns.push([cp, b]);
  prev = b;
}

// ---- NFC ------------------------------------------------------------------
const decomp = new Map(); // cp -> full canonical decomposition
for (let cp = 0; cp <= MAX; cp++) {
  if (isSurrogate(cp) || isHangul(cp)) continue;
  const s = String.fromCodePoint(cp);
  const d = s.normalize('NFD');
  if (d !== s) decomp.set(cp, cpsOf(d));
}
const reorders = (a, b) => { const s = str([0x61, a, b]); return s.normalize('NFD') !== s; };
const marks = [];
for (let cp = 0; cp <= MAX; cp++) {
  if (isSurrogate(cp) || isHangul(cp) || decomp.has(cp)) continue;
  if (reorders(cp, 0x316) || reorders(0x316, cp) || reorders(cp, 0x301) || reorders(0x301, cp))
    marks.push(cp);
}
const cmp = (a, b) => (reorders(a, b) ? 1 : reorders(b, a) ? -1 : 0);
marks.sort(cmp);
const rank = new Map();
for (let i = 0, r = 0; i < marks.length; i++) {
  if (i === 0 || cmp(marks[i - 1], marks[i]) !== 0) r++;
  rank.set(marks[i], r);
}
const cccRuns = []; // [start, end, rank]
for (const cp of [...rank.keys()].sort((a, b) => a - b)) {
  const last = cccRuns[cccRuns.length - 1];
  if (last && last[1] === cp - 1 && last[2] === rank.get(cp)) last[1] = cp;
  else cccRuns.push([cp, cp, rank.get(cp)]);
}
// A primary composite c composes from (NFC of its decomposition less the last
// code point, that last code point): NFC's last step on NFD(c) is that pair.
const comps = [];
for (const [cp, d] of decomp) {
  const s = String.fromCodePoint(cp);
  if (d.length < 2 || s.normalize('NFC') !== s) continue;
  const first = cpsOf(str(d.slice(0, -1)).normalize('NFC'));
  const second = d[d.length - 1];
  if (first.length !== 1 || str([first[0], second]).normalize('NFC') !== s)
    throw new Error(`U+${cp.toString(16)}: no composition pair found`);
  comps.push([first[0], second, cp]);
}
comps.sort((a, b) => a[0] - b[0] || a[1] - b[1]);

// ---- check: the algorithm of unicode.c over these tables vs normalize ----
const compMap = new Map(comps.map(([a, b, c]) => [a * 0x200000 + b, c]));
const cccOf = (cp) => rank.get(cp) ?? 0;
const SB = 0xac00, LB = 0x1100, VB = 0x1161, TB = 0x11a7, LC = 19, VC = 21, TC = 28, NC = VC * TC;
function nfc(cps) {
  const d = [];
  for (const cp of cps) {
    if (isHangul(cp)) {
      const s = cp - SB;
      d.push(LB + Math.floor(s / NC), VB + Math.floor((s % NC) / TC));
      if (s % TC) d.push(TB + (s % TC));
    } else d.push(...(decomp.get(cp) ?? [cp]));
  }
  for (let i = 1; i < d.length; i++) // stable insertion sort of non-starter runs
    for (let j = i; j > 0 && cccOf(d[j]) && cccOf(d[j - 1]) > cccOf(d[j]); j--)
      [d[j - 1], d[j]] = [d[j], d[j - 1]];
  const out = [];
  let starter = -1, lastCcc = -1;
  for (const cp of d) {
    const c = cccOf(cp);
    if (starter >= 0 && (lastCcc < c || (lastCcc === 0 && c === 0 && out.length - 1 === starter))) {
      const s = out[starter];
      let comp;
      if (s >= LB && s < LB + LC && cp >= VB && cp < VB + VC) comp = SB + ((s - LB) * VC + cp - VB) * TC;
      else if (isHangul(s) && (s - SB) % TC === 0 && cp > TB && cp < TB + TC) comp = s + cp - TB;
      else comp = compMap.get(s * 0x200000 + cp);
      if (comp !== undefined) { out[starter] = comp; continue; }
    }
    if (c === 0) { starter = out.length; lastCcc = 0; } else lastCcc = c;
    out.push(cp);
  }
  return out;
}
const check = (cps) => {
  const want = str(cps).normalize('NFC'), got = str(nfc(cps));
  if (want !== got) throw new Error(`NFC mismatch on ${cps.map((c) => c.toString(16))}`);
};
for (let cp = 0; cp <= MAX; cp++) if (!isSurrogate(cp)) check([cp]);
const pool = [...decomp.keys(), ...marks, ...comps.map((c) => c[0]), 0x61, 0x41, 0x1100, 0x1161,
  0x11a8, 0xac00, 0xac01, 0x20, 0x3b1, 0x627, 0x915];
let seed = 12345;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
for (let i = 0; i < 300000; i++) {
  const seq = [];
  for (let k = 1 + rnd(6); k > 0; k--) seq.push(pool[rnd(pool.length)]);
  check(seq);
}

// ---- write ------------------------------------------------------------
const hex = (n) => '0x' + n.toString(16).toUpperCase();
const rows = (items, per) => {
  const lines = [];
  for (let i = 0; i < items.length; i += per) lines.push('    ' + items.slice(i, i + per).join(', ') + ',');
  return lines.join('\n');
};
const decompList = [...decomp.entries()].sort((a, b) => a[0] - b[0]);
const decompCps = [];
const decompRows = decompList.map(([cp, d]) => {
  const row = `{${hex(cp)}, ${decompCps.length}, ${d.length}}`;
  decompCps.push(...d);
  return row;
});
const out = `/* unicode_tables.c: GENERATED by unicode_gen.mjs from node ${process.version}
 * (Unicode ${process.versions.unicode}, ICU ${process.versions.icu}); do not edit, rerun the generator. */
#include "tokenizer/unicode_tables.h"

const char unicode_tables_version[] = "${process.versions.unicode}";

/* runs of equal class bits: each entry starts a run that lasts until the next */
const unicode_class_run unicode_class_runs[] = {
${rows(classRuns.map(([cp, b]) => `{${hex(cp)}, ${b}}`), 6)}
};
const size_t unicode_class_run_count = ${classRuns.length};

/* nonzero canonical combining classes, as ranks (see unicode_gen.mjs) */
const unicode_ccc_run unicode_ccc_runs[] = {
${rows(cccRuns.map(([a, b, r]) => `{${hex(a)}, ${hex(b)}, ${r}}`), 4)}
};
const size_t unicode_ccc_run_count = ${cccRuns.length};

/* full canonical decompositions: code point, offset in unicode_decomp_cps, length */
const unicode_decomp unicode_decomps[] = {
${rows(decompRows, 4)}
};
const size_t unicode_decomp_count = ${decompRows.length};
const uint32_t unicode_decomp_cps[] = {
${rows(decompCps.map(hex), 8)}
};

/* primary composites by (first, second) */
const unicode_comp unicode_comps[] = {
${rows(comps.map(([a, b, c]) => `{${hex(a)}, ${hex(b)}, ${hex(c)}}`), 3)}
};
const size_t unicode_comp_count = ${comps.length};
`;
const dest = join(dirname(fileURLToPath(import.meta.url)), 'unicode_tables.c');
writeFileSync(dest, out);
console.log(`${dest}: Unicode ${process.versions.unicode}, ${classRuns.length} class runs, ` +
  `${cccRuns.length} ccc runs (${marks.length} marks), ${decompRows.length} decompositions, ` +
  `${comps.length} composites`);
