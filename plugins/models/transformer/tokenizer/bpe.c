/* bpe.c: Hugging Face byte-level BPE tokenizers (see bpe.h). The pipeline
 * follows the reference (tokenizers.js, tests/ref/tokenizers/) step by step:
 * added tokens are split out of the text, the rest is normalized, split by
 * the pre-tokenizer regexes, mapped to bytes, and merged by rank; the post
 * processor adds its special tokens around the result. */
#include "tokenizer/bpe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fail.h"
#include "tern/support/atomic_file.h"
#include "tern/support/regular_file.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"

enum { MAX_VOCAB = 1 << 24, MAX_STEPS = 4 };

/* ---- hash maps ------------------------------------------------------------ */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* token string -> id; the keys live in one arena */
typedef struct {
    uint64_t hash;
    uint32_t off, len;
    int32_t id; /* -1: empty */
} smap_slot;

typedef struct {
    smap_slot *slots;
    size_t cap; /* a power of two */
    char *keys;
    size_t keys_len, keys_cap;
} strmap;

static int smap_init(strmap *m, size_t count)
{
    m->cap = 16;
    while (m->cap < 2 * count)
        m->cap *= 2;
    m->slots = malloc(m->cap * sizeof *m->slots);
    m->keys_cap = 1024;
    m->keys = malloc(m->keys_cap);
    m->keys_len = 0;
    if (!m->slots || !m->keys)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        m->slots[i].id = -1;
    return 0;
}

static smap_slot *smap_find(const strmap *m, const char *s, size_t n)
{
    uint64_t h = hash_bytes(s, n);
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        smap_slot *e = &m->slots[i];
        if (e->id < 0 || (e->hash == h && e->len == n && memcmp(m->keys + e->off, s, n) == 0))
            return e;
    }
}

static int32_t smap_get(const strmap *m, const char *s, size_t n)
{
    return smap_find(m, s, n)->id;
}

/* Insert or overwrite. The map is sized for every key up front. */
static int smap_put(strmap *m, const char *s, size_t n, int32_t id)
{
    smap_slot *e = smap_find(m, s, n);
    if (e->id >= 0) {
        e->id = id;
        return 0;
    }
    if (m->keys_len + n > m->keys_cap) {
        size_t cap = m->keys_cap;
        while (cap < m->keys_len + n)
            cap *= 2;
        char *k = realloc(m->keys, cap);
        if (!k)
            return -1;
        m->keys = k;
        m->keys_cap = cap;
    }
    memcpy(m->keys + m->keys_len, s, n);
    *e = (smap_slot){hash_bytes(s, n), (uint32_t)m->keys_len, (uint32_t)n, id};
    m->keys_len += n;
    return 0;
}

/* (left id, right id) -> merge rank and merged id */
typedef struct {
    uint64_t key; /* UINT64_MAX: empty */
    uint32_t rank;
    int32_t id;
} pair_slot;

static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

static size_t pair_hash(uint64_t k) { return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20); }

/* ---- added tokens: a byte trie for the leftmost-longest split ------------- */

typedef struct {
    int32_t child, sibling, token; /* token: index into bpe.added, -1 if none ends here */
    unsigned char byte;
} trie_node;

typedef struct {
    trie_node *nodes; /* nodes[0] is the root */
    size_t n, cap;
    unsigned char first[256]; /* bytes some token starts with */
} trie;

static int trie_insert(trie *t, const char *s, size_t len, int32_t token)
{
    if (t->n == 0) {
        t->cap = 64;
        t->nodes = malloc(t->cap * sizeof *t->nodes);
        if (!t->nodes)
            return -1;
        t->nodes[0] = (trie_node){-1, -1, -1, 0};
        t->n = 1;
    }
    t->first[(unsigned char)s[0]] = 1;
    int32_t at = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int32_t k = t->nodes[at].child;
        while (k >= 0 && t->nodes[k].byte != c)
            k = t->nodes[k].sibling;
        if (k < 0) {
            if (t->n == t->cap) {
                trie_node *nn = realloc(t->nodes, 2 * t->cap * sizeof *nn);
                if (!nn)
                    return -1;
                t->nodes = nn;
                t->cap *= 2;
            }
            k = (int32_t)t->n++;
            t->nodes[k] = (trie_node){-1, t->nodes[at].child, -1, c};
            t->nodes[at].child = k;
        }
        at = k;
    }
    t->nodes[at].token = token;
    return 0;
}

/* The longest token at s[0..n), its index (or -1) and *mlen its length. */
static int32_t trie_match(const trie *t, const unsigned char *s, size_t n, size_t *mlen)
{
    int32_t best = -1, at = 0;
    if (t->n == 0 || !t->first[s[0]])
        return -1;
    for (size_t i = 0; i < n; i++) {
        int32_t k = t->nodes[at].child;
        while (k >= 0 && t->nodes[k].byte != s[i])
            k = t->nodes[k].sibling;
        if (k < 0)
            break;
        at = k;
        if (t->nodes[at].token >= 0) {
            best = t->nodes[at].token;
            *mlen = i + 1;
        }
    }
    return best;
}

typedef struct {
    char *content;
    size_t len;
    int32_t id;
    unsigned char lstrip, rstrip;
} added_token;

/* ---- the tokenizer ---------------------------------------------------------- */

struct bpe {
    char *json, *config; /* the files as read, for bpe_save; config may be NULL */
    size_t json_len, config_len;
    int vocab_size, bos, eos, pad;
    uint32_t *tok_off, *tok_len; /* id -> its bytes in dec */
    char *dec;
    unsigned char *special; /* id -> 1 for a special added token */
    size_t max_bytes;
    strmap map; /* token string, as tokenizer.json writes it -> id */
    pair_slot *pairs;
    size_t pairs_cap;
    int32_t byte_id[256];         /* the id of each byte's ByteLevel character, -1 if none */
    int32_t unknown_ids[256][2];  /* what a byte without an id encodes to */
    unsigned char unknown_n[256];
    int ignore_merges, nfc;
    int nsteps; /* pre-tokenizer regexes, applied in turn */
    struct {
        pretok_pattern p;
        int space;
    } steps[MAX_STEPS];
    added_token *added;
    size_t nadded;
    trie raw, norm; /* added tokens matched before / after normalization */
    int32_t *prefix, *suffix; /* what the post-processor adds */
    size_t nprefix, nsuffix;
    uint32_t byte_cp[256]; /* ByteLevel: byte -> character, and back */
    int16_t cp_byte[324];
};

/* GPT-2's reversible map of bytes to printable characters: printable
 * Latin-1 stands for itself, the other bytes for U+0100 onwards in order */
static void byte_level_init(bpe *t)
{
    int n = 0;
    for (int i = 0; i < 324; i++)
        t->cp_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        t->byte_cp[b] = printable ? (uint32_t)b : (uint32_t)(256 + n++);
        t->cp_byte[t->byte_cp[b]] = (int16_t)b;
    }
}

int bpe_read_file(const char *path, char **buf, size_t *len, char *why, size_t whyn)
{
    /* not a FIFO (it would block) nor a device (read without end) */
    return tern_regular_read(path, BPE_FILE_MAX, buf, len, why, whyn);
}

/* The bytes a token string stands for: each character through the ByteLevel
 * map, or, when one is outside it, the string's own UTF-8 (as HF's decoder
 * does). out has room for n bytes. */
static size_t token_bytes(const bpe *b, const char *s, size_t n, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += unicode_next((const unsigned char *)s + i, n - i, &cp);
        if (cp >= 324 || b->cp_byte[cp] < 0) {
            memcpy(out, s, n);
            return n;
        }
        out[k++] = (char)b->cp_byte[cp];
    }
    return k;
}

/* A byte string as ByteLevel characters (out has room for 2n bytes). */
static size_t byte_level(const bpe *b, const unsigned char *s, size_t n, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += unicode_put(b->byte_cp[s[i]], (unsigned char *)out + k);
    return k;
}

/* ---- loading ------------------------------------------------------------------ */

static const char *type_of(json_t *o) { return json_string_value(json_object_get(o, "type")); }

/* a short description of a JSON value for messages */
static const char *describe(json_t *v, char *buf, size_t n)
{
    const char *t = json_is_object(v) ? type_of(v) : NULL;
    if (!v || json_is_null(v))
        snprintf(buf, n, "null");
    else if (t)
        snprintf(buf, n, "type \"%.60s\"", t);
    else if (json_is_string(v))
        snprintf(buf, n, "\"%.60s\"", json_string_value(v));
    else
        snprintf(buf, n, "a JSON value of another kind");
    return buf;
}

static int load_vocab(const char *path, json_t *model, json_t *added, bpe *b, char *err,
                      size_t errn)
{
    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab))
        return tf_fail(err, errn, "%s: key \"model\".\"vocab\" must be an object of token: id", path);
    if (!json_is_array(added) && added && !json_is_null(added))
        return tf_fail(err, errn, "%s: key \"added_tokens\" must be an array", path);
    /* sizes first: the largest id and the bytes of all strings */
    long long max_id = -1;
    size_t bytes = 0;
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= MAX_VOCAB)
            return tf_fail(err, errn, "%s: key \"model\".\"vocab\": the id of \"%.60s\" must be an "
                        "integer in 0..%d", path, key, MAX_VOCAB - 1);
        if (json_integer_value(v) > max_id)
            max_id = json_integer_value(v);
        bytes += strlen(key);
    }
    size_t i;
    json_array_foreach(added, i, v) {
        json_t *id = json_object_get(v, "id");
        const char *content = json_string_value(json_object_get(v, "content"));
        if (!json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= MAX_VOCAB || !content || !*content)
            return tf_fail(err, errn, "%s: key \"added_tokens\"[%zu] needs an \"id\" in 0..%d and a "
                        "non-empty \"content\" string", path, i, MAX_VOCAB - 1);
        if (json_is_true(json_object_get(v, "single_word")))
            return tf_fail(err, errn, "%s: key \"added_tokens\"[%zu] (\"%.60s\"): \"single_word\": "
                        "true is not supported", path, i, content);
        if (json_integer_value(id) > max_id)
            max_id = json_integer_value(id);
        bytes += strlen(content);
    }
    if (max_id < 0)
        return tf_fail(err, errn, "%s: key \"model\".\"vocab\" is empty", path);
    b->vocab_size = (int)max_id + 1;
    size_t nv = (size_t)b->vocab_size;
    b->tok_off = calloc(nv, sizeof *b->tok_off);
    b->tok_len = calloc(nv, sizeof *b->tok_len);
    b->special = calloc(nv, 1);
    b->dec = malloc(bytes + 1);
    unsigned char *seen = calloc(nv, 1);
    b->nadded = json_array_size(added);
    b->added = calloc(b->nadded + 1, sizeof *b->added);
    if (!b->tok_off || !b->tok_len || !b->special || !b->dec || !seen || !b->added ||
        smap_init(&b->map, json_object_size(vocab) + b->nadded) != 0) {
        free(seen);
        return tf_fail(err, errn, "%s: out of memory", path);
    }
    size_t at = 0;
    json_object_foreach(vocab, key, v) {
        int32_t id = (int32_t)json_integer_value(v);
        size_t n = strlen(key);
        if (seen[id]) {
            tf_fail(err, errn, "%s: key \"model\".\"vocab\": id %d is given to two tokens, one of "
                 "them \"%.60s\"", path, id, key);
            free(seen);
            return -1;
        }
        seen[id] = 1;
        if (smap_put(&b->map, key, n, id) != 0) {
            free(seen);
            return tf_fail(err, errn, "%s: out of memory", path);
        }
        b->tok_off[id] = (uint32_t)at;
        b->tok_len[id] = (uint32_t)token_bytes(b, key, n, b->dec + at);
        at += b->tok_len[id];
    }
    free(seen);
    /* added tokens take precedence over the vocabulary, in encoding and decoding */
    json_array_foreach(added, i, v) {
        added_token *a = &b->added[i];
        const char *content = json_string_value(json_object_get(v, "content"));
        a->len = strlen(content);
        a->content = b->dec + at;
        memcpy(a->content, content, a->len);
        a->id = (int32_t)json_integer_value(json_object_get(v, "id"));
        a->lstrip = json_is_true(json_object_get(v, "lstrip"));
        a->rstrip = json_is_true(json_object_get(v, "rstrip"));
        if (smap_put(&b->map, content, a->len, a->id) != 0)
            return tf_fail(err, errn, "%s: out of memory", path);
        b->tok_off[a->id] = (uint32_t)at;
        b->tok_len[a->id] = (uint32_t)a->len;
        b->special[a->id] = json_is_true(json_object_get(v, "special"));
        at += a->len;
    }
    for (size_t id = 0; id < nv; id++)
        if (b->tok_len[id] > b->max_bytes)
            b->max_bytes = b->tok_len[id];
    return 0;
}

/* "a b" or ["a", "b"] */
static int merge_parts(json_t *m, const char **a, size_t *na, const char **bb, size_t *nb)
{
    if (json_is_string(m)) {
        const char *s = json_string_value(m), *sp = strchr(s, ' ');
        if (!sp || sp == s || !sp[1] || strchr(sp + 1, ' '))
            return -1;
        *a = s, *na = (size_t)(sp - s), *bb = sp + 1, *nb = strlen(sp + 1);
        return 0;
    }
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0));
        *bb = json_string_value(json_array_get(m, 1));
        *na = strlen(*a), *nb = strlen(*bb);
        return *na && *nb ? 0 : -1;
    }
    return -1;
}

static int load_merges(const char *path, json_t *model, bpe *b, char *err, size_t errn)
{
    json_t *merges = json_object_get(model, "merges");
    if (!json_is_array(merges))
        return tf_fail(err, errn, "%s: key \"model\".\"merges\" must be an array", path);
    size_t count = json_array_size(merges);
    b->pairs_cap = 16;
    while (b->pairs_cap < 2 * count)
        b->pairs_cap *= 2;
    b->pairs = malloc(b->pairs_cap * sizeof *b->pairs);
    char *joined = malloc(4096);
    size_t joined_cap = 4096;
    if (!b->pairs || !joined) {
        free(joined);
        return tf_fail(err, errn, "%s: out of memory", path);
    }
    for (size_t i = 0; i < b->pairs_cap; i++)
        b->pairs[i].key = UINT64_MAX;
    int rc = 0;
    for (size_t r = 0; r < count && rc == 0; r++) {
        json_t *m = json_array_get(merges, r);
        const char *a, *c;
        size_t na, nc;
        if (merge_parts(m, &a, &na, &c, &nc) != 0) {
            rc = tf_fail(err, errn, "%s: key \"model\".\"merges\"[%zu] must be \"left right\" (one "
                      "space) or [\"left\", \"right\"]", path, r);
            break;
        }
        if (na + nc > joined_cap) {
            free(joined);
            joined_cap = 2 * (na + nc);
            joined = malloc(joined_cap);
            if (!joined)
                return tf_fail(err, errn, "%s: out of memory", path);
        }
        memcpy(joined, a, na);
        memcpy(joined + na, c, nc);
        int32_t ia = smap_get(&b->map, a, na), ic = smap_get(&b->map, c, nc);
        int32_t ij = smap_get(&b->map, joined, na + nc);
        if (ia < 0 || ic < 0 || ij < 0) {
            const char *which = ia < 0 ? a : ic < 0 ? c : joined;
            int n = (int)(ia < 0 ? na : ic < 0 ? nc : na + nc);
            rc = tf_fail(err, errn, "%s: key \"model\".\"merges\"[%zu]: \"%.*s\" is not in the "
                      "vocabulary", path, r, n > 60 ? 60 : n, which);
            break;
        }
        /* a repeated pair keeps its last rank, as HF and the reference do */
        uint64_t k = pair_key(ia, ic);
        size_t s = pair_hash(k) & (b->pairs_cap - 1);
        while (b->pairs[s].key != UINT64_MAX && b->pairs[s].key != k)
            s = (s + 1) & (b->pairs_cap - 1);
        b->pairs[s] = (pair_slot){k, (uint32_t)r, ij};
    }
    free(joined);
    return rc;
}

static const pair_slot *pair_get(const bpe *b, int32_t l, int32_t r)
{
    uint64_t k = pair_key(l, r);
    for (size_t s = pair_hash(k) & (b->pairs_cap - 1);; s = (s + 1) & (b->pairs_cap - 1)) {
        if (b->pairs[s].key == k)
            return &b->pairs[s];
        if (b->pairs[s].key == UINT64_MAX)
            return NULL;
    }
}

static int check_null_or_empty(const char *path, json_t *model, const char *key, char *err,
                               size_t errn)
{
    json_t *v = json_object_get(model, key);
    if (!v || json_is_null(v) || (json_is_string(v) && !*json_string_value(v)))
        return 0;
    char d[96];
    return tf_fail(err, errn, "%s: key \"model\".\"%s\" is %s; tern supports null or \"\" only",
                path, key, describe(v, d, sizeof d));
}

static int load_model(const char *path, json_t *root, bpe *b, char *err, size_t errn)
{
    json_t *model = json_object_get(root, "model");
    const char *type = type_of(model);
    char d[96];
    if (!type || strcmp(type, "BPE") != 0)
        return tf_fail(err, errn, "%s: key \"model\" is %s; tern reads BPE models only", path,
                    describe(model, d, sizeof d));
    json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout))
        return tf_fail(err, errn, "%s: key \"model\".\"dropout\" must be null (BPE dropout makes "
                    "encoding random)", path);
    if (check_null_or_empty(path, model, "continuing_subword_prefix", err, errn) != 0 ||
        check_null_or_empty(path, model, "end_of_word_suffix", err, errn) != 0)
        return -1;
    if (json_is_true(json_object_get(model, "fuse_unk")))
        return tf_fail(err, errn, "%s: key \"model\".\"fuse_unk\": true is not supported", path);
    if (load_vocab(path, model, json_object_get(root, "added_tokens"), b, err, errn) != 0 ||
        load_merges(path, model, b, err, errn) != 0)
        return -1;
    b->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
    int byte_fallback = json_is_true(json_object_get(model, "byte_fallback"));
    int32_t unk = -1;
    json_t *u = json_object_get(model, "unk_token");
    if (json_is_string(u)) {
        unk = smap_get(&b->map, json_string_value(u), strlen(json_string_value(u)));
        if (unk < 0)
            return tf_fail(err, errn, "%s: key \"model\".\"unk_token\" (\"%.60s\") is not in the "
                        "vocabulary", path, json_string_value(u));
    } else if (u && !json_is_null(u)) {
        return tf_fail(err, errn, "%s: key \"model\".\"unk_token\" must be a string or null", path);
    }
    /* a byte whose character is not in the vocabulary: its <0xXX> tokens for
     * byte_fallback (of the character's UTF-8, as the reference does), else
     * unk_token, else nothing */
    for (int c = 0; c < 256; c++) {
        char s[4];
        size_t n = unicode_put(b->byte_cp[c], (unsigned char *)s);
        b->byte_id[c] = smap_get(&b->map, s, n);
        b->unknown_n[c] = 0;
        int ok = byte_fallback;
        for (size_t k = 0; ok && k < n; k++) {
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", (unsigned char)s[k]);
            b->unknown_ids[c][k] = smap_get(&b->map, name, 6);
            ok = b->unknown_ids[c][k] >= 0;
        }
        if (ok)
            b->unknown_n[c] = (unsigned char)n;
        else if (unk >= 0)
            b->unknown_ids[c][0] = unk, b->unknown_n[c] = 1;
    }
    return 0;
}

static int load_normalizer(const char *path, json_t *root, bpe *b, char *err, size_t errn)
{
    json_t *n = json_object_get(root, "normalizer");
    char d[96];
    if (!n || json_is_null(n))
        return 0;
    const char *type = type_of(n);
    if (type && strcmp(type, "NFC") == 0) {
        b->nfc = 1;
        return 0;
    }
    if (type && strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(n, "normalizers"), *v;
        size_t i;
        json_array_foreach(list, i, v) {
            if (!type_of(v) || strcmp(type_of(v), "NFC") != 0)
                return tf_fail(err, errn, "%s: key \"normalizer\".\"normalizers\"[%zu] is %s; tern "
                            "supports NFC only", path, i, describe(v, d, sizeof d));
            b->nfc = 1;
        }
        if (json_is_array(list))
            return 0;
    }
    return tf_fail(err, errn, "%s: key \"normalizer\" is %s; tern supports null and NFC", path,
                describe(n, d, sizeof d));
}

static int load_pre_tokenizer(const char *path, json_t *root, bpe *b, char *err, size_t errn)
{
    json_t *pt = json_object_get(root, "pre_tokenizer");
    char d[96];
    const char *type = type_of(pt);
    json_t *one[1] = {pt}, **list = one;
    size_t count = 1;
    json_t *seq = NULL;
    if (type && strcmp(type, "Sequence") == 0) {
        seq = json_object_get(pt, "pretokenizers");
        if (!json_is_array(seq) || json_array_size(seq) == 0 ||
            json_array_size(seq) > MAX_STEPS)
            return tf_fail(err, errn, "%s: key \"pre_tokenizer\".\"pretokenizers\" must be an "
                        "array of 1 to %d pre-tokenizers", path, MAX_STEPS);
        count = json_array_size(seq);
        list = NULL;
    }
    for (size_t i = 0; i < count; i++) {
        json_t *p = list ? list[i] : json_array_get(seq, i);
        const char *t = type_of(p);
        char where[64];
        if (list)
            snprintf(where, sizeof where, "\"pre_tokenizer\"");
        else
            snprintf(where, sizeof where, "\"pre_tokenizer\".\"pretokenizers\"[%zu]", i);
        if (t && strcmp(t, "Split") == 0 && i + 1 < count) {
            json_t *pat = json_object_get(p, "pattern");
            const char *re = json_string_value(json_object_get(pat, "Regex"));
            const char *behavior = json_string_value(json_object_get(p, "behavior"));
            int k = re ? pretok_find(re) : -1;
            if (k < 0)
                return tf_fail(err, errn, "%s: key %s.\"pattern\" is %s%.80s%s; tern knows the "
                            "Regex patterns of GPT-2, Llama 3 and Qwen2 (and \\p{N}, \\p{N}+) only", path, where,
                            re ? "the Regex \"" : "not a Regex", re ? re : "", re ? "\"" : "");
            if (!behavior || strcmp(behavior, "Isolated") != 0 ||
                json_is_true(json_object_get(p, "invert")))
                return tf_fail(err, errn, "%s: key %s: tern supports \"behavior\": \"Isolated\" "
                            "with \"invert\": false only", path, where);
            b->steps[b->nsteps].p = (pretok_pattern)k;
            b->steps[b->nsteps++].space = UNICODE_WS;
        } else if (t && strcmp(t, "Digits") == 0 && i + 1 < count) {
            /* digits split apart (individual_digits) or in runs, the rest left whole */
            json_t *ind = json_object_get(p, "individual_digits");
            b->steps[b->nsteps].p = json_is_true(ind) ? PRETOK_DIGIT : PRETOK_DIGITS;
            b->steps[b->nsteps++].space = UNICODE_WS;
        } else if (t && strcmp(t, "ByteLevel") == 0 && i + 1 == count) {
            if (json_is_true(json_object_get(p, "add_prefix_space")))
                return tf_fail(err, errn, "%s: key %s: \"add_prefix_space\": true is not supported",
                            path, where);
            json_t *use_regex = json_object_get(p, "use_regex");
            if (!use_regex || json_is_true(use_regex)) { /* GPT-2's regex, JavaScript's \s */
                b->steps[b->nsteps].p = PRETOK_GPT2;
                b->steps[b->nsteps++].space = UNICODE_JS_SPACE;
            }
        } else {
            return tf_fail(err, errn, "%s: key %s is %s; tern supports ByteLevel, alone or last in "
                        "a Sequence after Split regexes and Digits", path, where, describe(p, d, sizeof d));
        }
    }
    return 0;
}

static int push_ids(int32_t **v, size_t *n, json_t *ids)
{
    size_t i;
    json_t *x;
    json_array_foreach(ids, i, x) {
        int32_t *nv = realloc(*v, (*n + 1) * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        nv[(*n)++] = (int32_t)json_integer_value(x);
    }
    return 0;
}

static int load_template(const char *path, json_t *tp, const char *where, bpe *b, char *err,
                         size_t errn)
{
    json_t *single = json_object_get(tp, "single"), *special = json_object_get(tp, "special_tokens");
    if (!json_is_array(single))
        return tf_fail(err, errn, "%s: key %s.\"single\" must be an array", path, where);
    if (b->prefix || b->suffix)
        return tf_fail(err, errn, "%s: key %s: one TemplateProcessing only", path, where);
    int seen_a = 0;
    size_t i;
    json_t *item;
    json_array_foreach(single, i, item) {
        const char *seq = json_string_value(json_object_get(json_object_get(item, "Sequence"), "id"));
        const char *name = json_string_value(json_object_get(json_object_get(item, "SpecialToken"), "id"));
        if (seq && strcmp(seq, "A") == 0 && !seen_a) {
            seen_a = 1;
            continue;
        }
        if (!name)
            return tf_fail(err, errn, "%s: key %s.\"single\"[%zu] must be a SpecialToken or the "
                        "Sequence A", path, where, i);
        json_t *ids = json_object_get(json_object_get(special, name), "ids");
        int32_t **v = seen_a ? &b->suffix : &b->prefix;
        size_t *n = seen_a ? &b->nsuffix : &b->nprefix;
        if (json_is_array(ids)) {
            size_t k;
            json_t *x;
            json_array_foreach(ids, k, x)
                if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                    json_integer_value(x) >= b->vocab_size)
                    return tf_fail(err, errn, "%s: key %s.\"special_tokens\".\"%.60s\".\"ids\" must "
                                "hold ids of the vocabulary", path, where, name);
            if (push_ids(v, n, ids) != 0)
                return tf_fail(err, errn, "%s: out of memory", path);
        } else {
            int32_t id = smap_get(&b->map, name, strlen(name));
            json_t *one = json_pack("[i]", (json_int_t)id);
            int rc = id < 0 ? 1 : !one ? -1 : push_ids(v, n, one);
            json_decref(one);
            if (rc > 0)
                return tf_fail(err, errn, "%s: key %s.\"single\"[%zu]: \"%.60s\" is not a token",
                            path, where, i, name);
            if (rc < 0)
                return tf_fail(err, errn, "%s: out of memory", path);
        }
    }
    return 0;
}

static int load_post_processor(const char *path, json_t *root, bpe *b, char *err, size_t errn)
{
    json_t *pp = json_object_get(root, "post_processor");
    char d[96];
    if (!pp || json_is_null(pp))
        return 0;
    const char *type = type_of(pp);
    if (type && strcmp(type, "ByteLevel") == 0)
        return 0;
    if (type && strcmp(type, "TemplateProcessing") == 0)
        return load_template(path, pp, "\"post_processor\"", b, err, errn);
    if (type && strcmp(type, "Sequence") == 0 && json_is_array(json_object_get(pp, "processors"))) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(pp, "processors"), i, p) {
            const char *t = type_of(p);
            char where[64];
            snprintf(where, sizeof where, "\"post_processor\".\"processors\"[%zu]", i);
            if (t && strcmp(t, "ByteLevel") == 0)
                continue;
            if (!t || strcmp(t, "TemplateProcessing") != 0)
                return tf_fail(err, errn, "%s: key %s is %s; tern supports ByteLevel and "
                            "TemplateProcessing", path, where, describe(p, d, sizeof d));
            if (load_template(path, p, where, b, err, errn) != 0)
                return -1;
        }
        return 0;
    }
    return tf_fail(err, errn, "%s: key \"post_processor\" is %s; tern supports null, ByteLevel, "
                "TemplateProcessing and a Sequence of them", path, describe(pp, d, sizeof d));
}

static int load_decoder(const char *path, json_t *root, char *err, size_t errn)
{
    json_t *dec = json_object_get(root, "decoder");
    char d[96];
    const char *type = type_of(dec);
    if (type && strcmp(type, "ByteLevel") == 0)
        return 0;
    return tf_fail(err, errn, "%s: key \"decoder\" is %s; tern supports ByteLevel only", path,
                describe(dec, d, sizeof d));
}

static int build_tries(const char *path, bpe *b, json_t *added, char *err, size_t errn)
{
    for (size_t i = 0; i < b->nadded; i++) {
        added_token *a = &b->added[i];
        json_t *v = json_array_get(added, i);
        json_t *normalized = json_object_get(v, "normalized");
        /* normalized defaults to !special; it matters only with a normalizer */
        int norm = normalized ? json_is_true(normalized)
                              : !json_is_true(json_object_get(v, "special"));
        int rc;
        if (norm && b->nfc) {
            char *s;
            size_t n;
            if (unicode_nfc(a->content, a->len, &s, &n) != 0)
                return tf_fail(err, errn, "%s: out of memory", path);
            rc = n ? trie_insert(&b->norm, s, n, (int32_t)i) : 0;
            free(s);
        } else {
            rc = trie_insert(&b->raw, a->content, a->len, (int32_t)i);
        }
        if (rc != 0)
            return tf_fail(err, errn, "%s: out of memory", path);
    }
    return 0;
}

static int config_token(const char *path, json_t *cfg, const char *key, const bpe *b, int *out,
                        char *err, size_t errn)
{
    json_t *v = json_object_get(cfg, key);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_object(v))
        v = json_object_get(v, "content");
    const char *s = json_string_value(v);
    if (!s)
        return tf_fail(err, errn, "%s: key \"%s\" must be a string, {\"content\": string} or null",
                    path, key);
    *out = smap_get(&b->map, s, strlen(s));
    if (*out < 0)
        return tf_fail(err, errn, "%s: key \"%s\": \"%.60s\" is not a token of tokenizer.json",
                    path, key, s);
    return 0;
}

/* The tokenizer_config.json beside path, or (b->config already set) the
 * text given for it. */
static int load_config(const char *path, bpe *b, char *err, size_t errn)
{
    char cpath[4096];
    const char *slash = strrchr(path, '/');
    int dlen = slash ? (int)(slash - path) : 1;
    if (snprintf(cpath, sizeof cpath, "%.*s/tokenizer_config.json", dlen, slash ? path : ".") >=
        (int)sizeof cpath)
        return tf_fail(err, errn, "%s: path too long", path);
    b->bos = b->eos = b->pad = -1;
    char why[TERN_REGULAR_WHY_MAX];
    if (!b->config && bpe_read_file(cpath, &b->config, &b->config_len, why, sizeof why) != 0) {
        if (errno == ENOENT)
            return 0;
        return tf_fail(err, errn, "%s: cannot read: %s", cpath, why);
    }
    json_error_t jerr;
    /* as reals: HF configs hold integers past 64 bits (model_max_length 1e30) */
    json_t *cfg = json_loadb(b->config, b->config_len,
                             JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &jerr);
    if (!cfg)
        return tf_fail(err, errn, "%s:%d:%d: cannot read the tokenizer config: %s", cpath,
                    jerr.line, jerr.column, jerr.text);
    int rc = -1;
    if (!json_is_object(cfg))
        tf_fail(err, errn, "%s: must hold a JSON object", cpath);
    else if (config_token(cpath, cfg, "bos_token", b, &b->bos, err, errn) == 0 &&
             config_token(cpath, cfg, "eos_token", b, &b->eos, err, errn) == 0 &&
             config_token(cpath, cfg, "pad_token", b, &b->pad, err, errn) == 0)
        rc = 0;
    json_decref(cfg);
    return rc;
}

int bpe_load(const char *path, json_t *root, char *json, size_t json_len, char *config,
             size_t config_len, bpe **out, char *err, size_t errn)
{
    *out = NULL;
    bpe *b = calloc(1, sizeof *b);
    if (!b) {
        free(json);
        free(config);
        return tf_fail(err, errn, "%s: out of memory", path);
    }
    byte_level_init(b);
    b->json = json;
    b->json_len = json_len;
    b->config = config;
    b->config_len = config_len;
    if (load_normalizer(path, root, b, err, errn) != 0 ||
        load_pre_tokenizer(path, root, b, err, errn) != 0 ||
        load_decoder(path, root, err, errn) != 0 || load_model(path, root, b, err, errn) != 0 ||
        load_post_processor(path, root, b, err, errn) != 0 ||
        build_tries(path, b, json_object_get(root, "added_tokens"), err, errn) != 0 ||
        load_config(path, b, err, errn) != 0) {
        bpe_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

void bpe_free(bpe *b)
{
    if (!b)
        return;
    free(b->json);
    free(b->config);
    free(b->tok_off);
    free(b->tok_len);
    free(b->dec);
    free(b->special);
    free(b->map.slots);
    free(b->map.keys);
    free(b->pairs);
    free(b->added);
    free(b->raw.nodes);
    free(b->norm.nodes);
    free(b->prefix);
    free(b->suffix);
    free(b);
}

int bpe_save(const bpe *b, const char *dir, char *err, size_t errn)
{
    char path[4096];
    if (b->config) {
        if (snprintf(path, sizeof path, "%s/tokenizer_config.json", dir) >= (int)sizeof path)
            return tf_fail(err, errn, "%.200s...: directory path too long", dir);
        if (tern_atomic_file_put(path, b->config, b->config_len, err, errn) != 0)
            return -1;
    }
    if (snprintf(path, sizeof path, "%s/tokenizer.json", dir) >= (int)sizeof path)
        return tf_fail(err, errn, "%.200s...: directory path too long", dir);
    return tern_atomic_file_put(path, b->json, b->json_len, err, errn);
}

int bpe_vocab_size(const bpe *b) { return b->vocab_size; }
int bpe_bos(const bpe *b) { return b->bos; }
int bpe_eos(const bpe *b) { return b->eos; }
int bpe_pad(const bpe *b) { return b->pad; }
size_t bpe_max_bytes(const bpe *b) { return b->max_bytes; }

int32_t bpe_token_id(const bpe *b, const char *token)
{
    return token ? smap_get(&b->map, token, strlen(token)) : -1;
}

int bpe_is_special(const bpe *b, int32_t id) { return b->special[id]; }

size_t bpe_decode_one(const bpe *b, int32_t id, char *out)
{
    memcpy(out, b->dec + b->tok_off[id], b->tok_len[id]);
    return b->tok_len[id];
}

/* ---- encoding ------------------------------------------------------------------ */

typedef struct {
    uint32_t rank, pos; /* merge order: lowest rank, then leftmost */
    int32_t left, right, id;
} merge_entry;

/* per call scratch, grown on demand */
typedef struct {
    int32_t *ids;
    size_t n, cap;
    uint32_t *cps;
    uint8_t *cls;
    size_t *offs;
    size_t cps_cap;
    struct sym {
        int32_t id, prev, next;
    } *sym;
    merge_entry *heap;
    char *str;
    size_t sym_cap;
} work;

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int emit(work *w, int32_t id)
{
    if (w->n == w->cap && grow((void **)&w->ids, &w->cap, w->n + 1, sizeof *w->ids) != 0)
        return -1;
    w->ids[w->n++] = id;
    return 0;
}

static int heap_less(const merge_entry *a, const merge_entry *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(merge_entry *h, size_t *n, merge_entry e)
{
    size_t i = (*n)++;
    while (i > 0 && heap_less(&e, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
}

static merge_entry heap_pop(merge_entry *h, size_t *n)
{
    merge_entry top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && heap_less(&h[c + 1], &h[c]))
            c++;
        if (!heap_less(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

static void push_pair(const bpe *b, work *w, size_t *nheap, int32_t k)
{
    int32_t r = w->sym[k].next;
    if (r < 0 || w->sym[k].id < 0 || w->sym[r].id < 0)
        return;
    const pair_slot *p = pair_get(b, w->sym[k].id, w->sym[r].id);
    if (p)
        heap_push(w->heap, nheap, (merge_entry){p->rank, (uint32_t)k, w->sym[k].id, w->sym[r].id, p->id});
}

static int emit_symbol(const bpe *b, work *w, int32_t id, unsigned char byte)
{
    if (id >= 0)
        return emit(w, id);
    for (int k = 0; k < b->unknown_n[byte]; k++)
        if (emit(w, b->unknown_ids[byte][k]) != 0)
            return -1;
    return 0;
}

/* One pre-token's bytes -> ids: merge the adjacent pair of the lowest rank
 * (the leftmost among equals) until no pair merges. */
static int encode_word(const bpe *b, work *w, const unsigned char *p, size_t m)
{
    if (grow((void **)&w->sym, &w->sym_cap, m + 1, sizeof *w->sym) != 0)
        return -1;
    /* the same capacity serves the heap (m - 1 pairs, then two per merge:
     * under 3m entries) and the ByteLevel string (2m bytes) */
    void *h = realloc(w->heap, 3 * w->sym_cap * sizeof *w->heap);
    if (!h)
        return -1;
    w->heap = h;
    void *s = realloc(w->str, 2 * w->sym_cap + 1);
    if (!s)
        return -1;
    w->str = s;
    if (b->ignore_merges) { /* a pre-token that is a token is taken whole */
        int32_t id = smap_get(&b->map, w->str, byte_level(b, p, m, w->str));
        if (id >= 0)
            return emit(w, id);
    }
    for (size_t k = 0; k < m; k++)
        w->sym[k] = (struct sym){b->byte_id[p[k]], (int32_t)k - 1, k + 1 < m ? (int32_t)k + 1 : -1};
    size_t nheap = 0;
    for (size_t k = 0; k + 1 < m; k++)
        push_pair(b, w, &nheap, (int32_t)k);
    while (nheap) {
        merge_entry e = heap_pop(w->heap, &nheap);
        struct sym *l = &w->sym[e.pos];
        if (l->id != e.left || l->next < 0 || w->sym[l->next].id != e.right)
            continue; /* stale: one side has merged since */
        struct sym *r = &w->sym[l->next];
        l->id = e.id;
        l->next = r->next;
        if (r->next >= 0)
            w->sym[r->next].prev = (int32_t)e.pos;
        r->id = INT32_MIN;
        if (l->prev >= 0)
            push_pair(b, w, &nheap, l->prev);
        push_pair(b, w, &nheap, (int32_t)e.pos);
    }
    for (int32_t k = 0; k >= 0; k = w->sym[k].next)
        if (emit_symbol(b, w, w->sym[k].id, p[k]) != 0)
            return -1;
    return 0;
}

/* Split cps[s..e) by the pre-tokenizer regexes from step on, and encode each piece. */
static int split_and_encode(const bpe *b, work *w, const unsigned char *text, int step, size_t s,
                            size_t e)
{
    if (step == b->nsteps)
        return encode_word(b, w, text + w->offs[s], w->offs[e] - w->offs[s]);
    for (size_t i = s; i < e;) {
        size_t k = pretok_match(b->steps[step].p, b->steps[step].space, w->cps + s, w->cls + s,
                                e - s, i - s);
        if (split_and_encode(b, w, text, step + 1, i, i + k) != 0)
            return -1;
        i += k;
    }
    return 0;
}

static int encode_text(const bpe *b, work *w, const unsigned char *text, size_t len)
{
    if (len == 0)
        return 0;
    if (grow((void **)&w->offs, &w->cps_cap, len + 1, sizeof *w->offs) != 0)
        return -1;
    void *c = realloc(w->cps, w->cps_cap * sizeof *w->cps);
    if (!c)
        return -1;
    w->cps = c;
    c = realloc(w->cls, w->cps_cap);
    if (!c)
        return -1;
    w->cls = c;
    size_t n = 0;
    for (size_t i = 0; i < len; n++) {
        w->offs[n] = i;
        i += unicode_next(text + i, len - i, &w->cps[n]);
        w->cls[n] = (uint8_t)unicode_class(w->cps[n]);
    }
    w->offs[n] = len;
    return split_and_encode(b, w, text, 0, 0, n);
}

/* A piece of text between added tokens, or an added token (index into added). */
typedef struct {
    size_t start, len;
    int32_t added;
} section;

static int is_js_space(const unsigned char *t, size_t i, size_t n, size_t *len)
{
    uint32_t cp;
    *len = unicode_next(t + i, n - i, &cp);
    return (unicode_class(cp) & UNICODE_JS_SPACE) != 0;
}

/* Split text by the added tokens of tr (leftmost, then longest) and strip
 * around those with lstrip/rstrip (JavaScript's trimEnd/trimStart, as the
 * reference does). *out malloc'd. */
static int split_added(const bpe *b, const trie *tr, const unsigned char *t, size_t len,
                       section **out, size_t *nout)
{
    section *v = NULL;
    size_t n = 0, cap = 0, start = 0;
    for (size_t i = 0; i <= len;) {
        size_t mlen = 0;
        int32_t a = i < len ? trie_match(tr, t + i, len - i, &mlen) : -1;
        if (a < 0 && i < len) {
            i++;
            continue;
        }
        if (grow((void **)&v, &cap, n + 2, sizeof *v) != 0) {
            free(v);
            return -1;
        }
        if (i > start)
            v[n++] = (section){start, i - start, -1};
        if (a < 0)
            break;
        v[n++] = (section){i, mlen, a};
        i += mlen;
        start = i;
    }
    for (size_t k = 0; k < n; k++) {
        if (v[k].added < 0)
            continue;
        const added_token *a = &b->added[v[k].added];
        if (a->lstrip && k > 0 && v[k - 1].added < 0) {
            section *p = &v[k - 1];
            size_t keep = 0, cl;
            for (size_t i = p->start; i < p->start + p->len; i += cl)
                if (!is_js_space(t, i, p->start + p->len, &cl))
                    keep = i + cl - p->start;
            p->len = keep;
        }
        if (a->rstrip && k + 1 < n && v[k + 1].added < 0) {
            section *q = &v[k + 1];
            size_t cl;
            while (q->len && is_js_space(t, q->start, q->start + q->len, &cl))
                q->start += cl, q->len -= cl;
        }
    }
    *out = v;
    *nout = n;
    return 0;
}

static int encode_section(const bpe *b, work *w, const unsigned char *t, size_t len)
{
    char *norm = NULL;
    size_t nlen = len;
    if (b->nfc) {
        if (unicode_nfc((const char *)t, len, &norm, &nlen) != 0)
            return -1;
        t = (const unsigned char *)norm;
    }
    int rc = 0;
    if (b->norm.n == 0) {
        rc = encode_text(b, w, t, nlen);
    } else {
        section *v = NULL;
        size_t n = 0;
        rc = split_added(b, &b->norm, t, nlen, &v, &n);
        for (size_t k = 0; rc == 0 && k < n; k++)
            rc = v[k].added >= 0 ? emit(w, b->added[v[k].added].id)
                                 : encode_text(b, w, t + v[k].start, v[k].len);
        free(v);
    }
    free(norm);
    return rc;
}

int bpe_encode(const bpe *b, const char *text, size_t len, int add_special, int32_t **ids,
               size_t *n)
{
    work w = {0};
    const unsigned char *t = (const unsigned char *)text;
    section *v = NULL;
    size_t nv = 0;
    int rc = grow((void **)&w.ids, &w.cap, 16, sizeof *w.ids);
    for (size_t k = 0; rc == 0 && add_special && k < b->nprefix; k++)
        rc = emit(&w, b->prefix[k]);
    if (rc == 0 && len)
        rc = split_added(b, &b->raw, t, len, &v, &nv);
    for (size_t k = 0; rc == 0 && k < nv; k++)
        rc = v[k].added >= 0 ? emit(&w, b->added[v[k].added].id)
                             : encode_section(b, &w, t + v[k].start, v[k].len);
    for (size_t k = 0; rc == 0 && add_special && k < b->nsuffix; k++)
        rc = emit(&w, b->suffix[k]);
    free(v);
    free(w.cps);
    free(w.cls);
    free(w.offs);
    free(w.sym);
    free(w.heap);
    free(w.str);
    if (rc != 0) {
        free(w.ids);
        errno = ENOMEM;
        return -1;
    }
    *ids = w.ids;
    *n = w.n;
    return 0;
}
