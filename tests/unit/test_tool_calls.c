/* test_tool_calls.c: the function calls read from a turn of the model
 * (core/src/agent/tool_calls.c): the Hermes <tool_call> form, Llama 3.1's
 * bare JSON form, and every malformed call as a call with its error, never
 * a failure; an answer that is not a call is not one. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "agent/tool_calls.h"
#include "tern/abi.h"

static tern_parsed_call *calls;
static size_t n;

static void parse(const char *text)
{
    tern_tool_calls_free(calls, n);
    cr_assert_eq(tern_tool_calls_parse(text, &calls, &n), TERN_OK);
}

static void fini(void) { tern_tool_calls_free(calls, n), calls = NULL, n = 0; }

TestSuite(tool_calls, .fini = fini);

Test(tool_calls, hermes_calls_in_order_with_their_arguments)
{
    parse("Let me compute.\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": "
          "{\"expression\": \"123 * 456\"}}\n</tool_call>\nand <tool_call>{\"name\": \"python\", "
          "\"arguments\": {\"code\": \"print(1)\"}}</tool_call>");
    cr_assert_eq(n, 2);
    cr_expect_str_eq(calls[0].name, "calculator");
    cr_expect_str_eq(calls[0].arguments, "{\"expression\":\"123 * 456\"}");
    cr_expect_null(calls[0].error);
    cr_expect_str_eq(calls[1].name, "python");
    cr_expect_str_eq(calls[1].arguments, "{\"code\":\"print(1)\"}");
}

Test(tool_calls, arguments_as_a_string_of_json_and_parameters_are_taken)
{
    parse("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>");
    cr_assert_eq(n, 1);
    cr_expect_str_eq(calls[0].arguments, "{\"x\":1}");
    parse("<tool_call>{\"name\": \"f\", \"parameters\": {\"y\": [1, 2]}}</tool_call>");
    cr_assert_eq(n, 1);
    cr_expect_str_eq(calls[0].arguments, "{\"y\":[1,2]}");
    parse("<tool_call>{\"name\": \"f\"}</tool_call>");
    cr_assert_eq(n, 1);
    cr_expect_str_eq(calls[0].arguments, "{}", "no arguments: an empty object");
}

Test(tool_calls, llama_json_calls_with_or_without_the_python_tag)
{
    parse("{\"name\": \"calculator\", \"parameters\": {\"expression\": \"2+2\"}}");
    cr_assert_eq(n, 1);
    cr_expect_str_eq(calls[0].name, "calculator");
    cr_expect_str_eq(calls[0].arguments, "{\"expression\":\"2+2\"}");
    parse("<|python_tag|>  {\"name\": \"f\", \"arguments\": {}}\n");
    cr_assert_eq(n, 1);
    cr_expect_str_eq(calls[0].name, "f");
}

Test(tool_calls, answers_are_not_calls)
{
    parse("The answer is 42.");
    cr_expect_eq(n, 0);
    parse("{\"answer\": 42}");
    cr_expect_eq(n, 0, "JSON without a name and arguments is an answer");
    parse("{\"name\": \"Bob\"}");
    cr_expect_eq(n, 0, "a name alone is an answer");
    parse("use {\"name\": \"f\", \"arguments\": {}} like this");
    cr_expect_eq(n, 0, "a call inside prose is not the Llama form");
    parse("");
    cr_expect_eq(n, 0);
}

Test(tool_calls, malformed_calls_are_calls_with_an_error)
{
    parse("<tool_call>not json</tool_call>");
    cr_assert_eq(n, 1);
    cr_expect_null(calls[0].name);
    cr_assert_not_null(calls[0].error);
    cr_expect(strstr(calls[0].error, "not JSON"), "%s", calls[0].error);

    parse("<tool_call>{\"arguments\": {}}</tool_call>");
    cr_assert_eq(n, 1);
    cr_expect(strstr(calls[0].error, "no \"name\""), "%s", calls[0].error);

    parse("<tool_call>[1, 2]</tool_call>");
    cr_assert_eq(n, 1);
    cr_expect(strstr(calls[0].error, "JSON object"), "%s", calls[0].error);

    parse("<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>");
    cr_assert_eq(n, 1);
    cr_expect_str_eq(calls[0].name, "f");
    cr_expect_null(calls[0].arguments);
    cr_expect(strstr(calls[0].error, "must be a JSON object"), "%s", calls[0].error);

    parse("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}");
    cr_assert_eq(n, 1, "a call cut off by max_tokens");
    cr_expect(strstr(calls[0].error, "not closed"), "%s", calls[0].error);

    parse("<tool_call>{\"name\": \"f\"<tool_call>{\"name\": \"g\"}</tool_call>");
    cr_assert_eq(n, 2, "an unclosed call, then a whole one");
    cr_expect(strstr(calls[0].error, "not closed"));
    cr_expect_str_eq(calls[1].name, "g");

    char long_name[200];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    char text[400];
    snprintf(text, sizeof text, "<tool_call>{\"name\": \"%s\"}</tool_call>", long_name);
    parse(text);
    cr_assert_eq(n, 1);
    cr_expect(strstr(calls[0].error, "too long"), "%s", calls[0].error);

    parse("<tool_call>{\"name\": \"f\", \"name\": \"g\"}</tool_call>");
    cr_assert_eq(n, 1);
    cr_expect_not_null(calls[0].error, "a duplicate key is refused, not guessed");
}
