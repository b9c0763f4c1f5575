/*
 * chat_template.h: format a conversation into the prompt text a model was
 * trained on, byte for byte as Hugging Face's
 *   tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=...)
 * renders it. The templates of the common model families are written out in
 * C, and "auto" recognises which one a model's tokenizer_config.json holds;
 * any other template is interpreted as the model ships it by the Jinja
 * interpreter of jinja/ (jinja/README.md: the subset it understands).
 *
 * Templates ("name" below):
 *   jinja     the model's own template text, interpreted, with the variables
 *             transformers passes: messages, tools (None unless given),
 *             documents (None), add_generation_prompt, bos_token and
 *             eos_token from the file, date_string when
 *             chat_template_set_date() gave one, and the caller's extra
 *             variables (chat_template_apply_json(): e.g. Qwen3's
 *             enable_thinking). Any role the template accepts ("tool" too);
 *             a template's raise_exception() is an error with its message.
 *   chatml    Qwen2, Qwen2.5 (and -Coder), SmolLM, SmolLM2 instruct, Hermes:
 *               <|im_start|>{role}\n{content}<|im_end|>\n  per message,
 *               <|im_start|>assistant\n  as the generation prompt, and the
 *             model's default system prompt first when the conversation does
 *             not start with a system message (Qwen2: "You are a helpful
 *             assistant."; Qwen2.5: "You are Qwen, created by Alibaba Cloud.
 *             You are a helpful assistant."; SmolLM: none). Under "auto" the
 *             default is read from the template source; the explicit name has
 *             none unless chat_template_set_default_system() gives one. Some
 *             ChatML templates (Hermes 3, InternLM2) write bos_token first.
 *   llama3    Llama 3 instruct: <|begin_of_text|>, then per message
 *               <|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>
 *             and <|start_header_id|>assistant<|end_header_id|>\n\n as the
 *             generation prompt. The template first published with
 *             Meta-Llama-3-8B-Instruct adds the generation prompt even when
 *             it is not asked for; "auto" reproduces that too.
 *   llama3.1  Llama 3.1 / 3.2 / 3.3 instruct: as llama3, but the first message
 *             is always a system message holding the preamble
 *               Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n
 *             followed by the conversation's own system message (trimmed), if
 *             any. {date} is "26 Jul 2024" in the Llama 3.1 template; the
 *             Llama 3.2 template calls strftime_now("%d %b %Y"), i.e. today's
 *             date, which chat_template_set_date() can fix.
 *   plain     base models (GPT-2 and the like): the non-empty contents of all
 *             messages, in order, joined by "\n\n" (system prompt + "\n\n" +
 *             user text for one turn); no roles, no special tokens; the
 *             generation prompt adds nothing.
 *   none      the content of the last user message, unchanged (tern's
 *             behaviour before chat templates).
 *
 * "trim" is Python's str.strip() (what transformers' Jinja does): Unicode
 * whitespace at both ends, including U+001C..U+001F and U+0085, excluding
 * U+FEFF. The C templates render system/user/assistant text only; tools,
 * tool calls and other roles need "jinja" (chat_template_apply_json()).
 * Images are not supported.
 *
 * Functions that can fail return 0, or -1 with a message in err (what, where,
 * how to fix); err may be NULL.
 */
#ifndef TERN_CHAT_TEMPLATE_H
#define TERN_CHAT_TEMPLATE_H

#include <stddef.h>

/* One turn. role: "system", "user" or "assistant"; content: NUL-terminated
 * UTF-8. Both are borrowed: chat_template_apply() only reads them. */
typedef struct chat_message {
    const char *role;
    const char *content;
} chat_message;

typedef struct chat_template chat_template; /* opaque */

/*
 * Choose a template. `name` is the setting's value:
 *   "auto"      read DIR/tokenizer_config.json and recognise its
 *               "chat_template" (a string, or a list of {"name","template"}
 *               objects of which "default" is used). No DIR (NULL), no
 *               tokenizer_config.json, or no chat_template in it (absent or
 *               null) gives "none". A template none of the C templates
 *               renders exactly is interpreted ("jinja"); one the
 *               interpreter cannot parse is refused with the line:column
 *               and the explicit choices. A template that writes bos_token gets its text from
 *               the file's bos_token (a string or {"content": ...});
 *               "<|begin_of_text|>" when a llama template's file has none, an
 *               error for a ChatML one.
 *   "jinja"     interpret DIR/tokenizer_config.json's chat_template even when
 *               a C template would render it (the two give the same bytes;
 *               test_jinja checks that); no file or no template is an error.
 *   "chatml", "llama3", "llama3.1", "plain", "none"
 *               that template; DIR is not read (it may be NULL).
 * On success *out is a new template (free it with chat_template_free());
 * on failure *out is NULL and err says why: an unknown name, an unreadable
 * or malformed tokenizer_config.json (naming the file), an unrecognised
 * template, or out of memory.
 */
int chat_template_from_dir(const char *dir, const char *name, chat_template **out, char *err,
                           size_t errn);

/*
 * As chat_template_from_dir, with tokenizer_config.json's text (len bytes)
 * given rather than read (a GGUF model's, gguf_vocab.h); `where` names it in
 * messages.
 */
int chat_template_from_config_text(const char *where, const char *text, size_t len,
                                   const char *name, chat_template **out, char *err, size_t errn);

/*
 * Replace the default system prompt of a chatml template: the text inserted
 * as a first system message when the conversation has none. NULL (or "")
 * removes it. The text is copied. Fails on a template other than chatml, or
 * when out of memory (the old prompt is then kept).
 */
int chat_template_set_default_system(chat_template *t, const char *text, char *err, size_t errn);

/*
 * Fix the "Today Date" of a llama3.1 template (e.g. "26 Jul 2024"), for
 * templates that otherwise use the current date (Llama 3.2) or to change a
 * fixed one; on a jinja template it is the date_string variable the
 * Llama 3.x templates read (NULL: not set). NULL returns a strftime_now template to the current local date
 * and a fixed-date template to the date in its source. The text is copied and
 * must be non-empty and hold no newline. Fails on other templates and when
 * out of memory (the old date is then kept).
 */
int chat_template_set_date(chat_template *t, const char *date, char *err, size_t errn);

/*
 * Render n messages (n >= 1). When add_generation_prompt, the text ends with
 * the header the model answers after (the original Llama 3 template adds it
 * regardless, as the real one does). *text is malloc'd and NUL-terminated,
 * *len its length; free(*text). Fails, leaving *text NULL and *len 0, on
 * n == 0, a NULL message field, a role other than system/user/assistant
 * (any role for jinja, which leaves it to the template), "none" with no user
 * message, a jinja template's error (its raise_exception message), or out of
 * memory.
 */
int chat_template_apply(const chat_template *t, const chat_message *msgs, size_t n,
                        int add_generation_prompt, char **text, size_t *len, char *err,
                        size_t errn);

/*
 * As chat_template_apply, with the conversation as Hugging Face gives it to
 * apply_chat_template, as JSON text: `messages` an array of message objects
 * (role, content, and for jinja anything the template reads: an assistant's
 * "tool_calls" [{"type": "function", "function": {"name", "arguments"}, "id"}],
 * a "tool" message's "tool_call_id" and "name", "reasoning_content"),
 * `tools` NULL or an array of JSON-schema function descriptions
 * ({"type": "function", "function": {"name", "description", "parameters"}}),
 * `variables` NULL or an object of extra template variables
 * ({"enable_thinking": false}). A C template "auto" recognised in a model's
 * tokenizer_config.json renders {role, content} messages itself and hands
 * anything more (tools, variables, tool calls, other roles) to that same
 * source interpreted, so the bytes are the model's template's either way; an
 * explicitly named C template takes only {role, content} string messages and
 * neither tools nor variables (an error says to use "jinja").
 */
int chat_template_apply_json(const chat_template *t, const char *messages, const char *tools,
                             const char *variables, int add_generation_prompt, char **text,
                             size_t *len, char *err, size_t errn);

/* 1 when chat_template_apply_json() renders tools, tool calls and any role
 * with the model's own template (a jinja template, or a C one "auto"
 * recognised in a model's source), 0 for a template named explicitly. */
int chat_template_interprets(const chat_template *t);

/* The template's name: "jinja", "chatml", "llama3", "llama3.1", "plain" or
 * "none" (what "auto" picked). Owned by t. */
const char *chat_template_name(const chat_template *t);
/* The default system prompt (chatml), or NULL when there is none. Owned by t. */
const char *chat_template_default_system(const chat_template *t);
/* The text the model emits to end an assistant turn, where generation should
 * stop: "<|im_end|>" (chatml), "<|eot_id|>" (llama3, llama3.1), NULL (plain,
 * none); for jinja the first of <|im_end|>, <|eot_id|>, <end_of_turn> and
 * <|end|> the template's source writes, else the file's eos_token (NULL
 * when there is none). Owned by t. */
const char *chat_template_end_of_turn(const chat_template *t);
/* 1 when the rendered text already starts with the BOS token's text (the
 * llama templates, and some ChatML ones, write bos_token themselves; a jinja
 * template when its source names bos_token and the file has one), so the
 * caller must not add a
 * BOS id when encoding it; 0 otherwise. (transformers itself encodes chat
 * text without adding special tokens.) */
int chat_template_renders_bos(const chat_template *t);
/* The BOS text the template writes (see above), or NULL. Owned by t. */
const char *chat_template_bos(const chat_template *t);

/* Free t and everything it owns. NULL is allowed. */
void chat_template_free(chat_template *t);

#endif
