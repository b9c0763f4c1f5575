# harness.py: runs a Python solution's function tests inside the sandbox.
#
# The code reward (docs/rewards.md, docs/sandbox.md) starts
#   python3 -I /box/harness.py
# with /box/solution.py, the program, and on standard input
#   {"nonce": "<hex>", "asserts": "<test code>" | ["<test>", ...]}
# It answers on descriptor 3, one line each, every line starting with the
# nonce:
#   S <n>           n tests found (before the solution runs)
#   P <i>           test i passed
#   F <i> <error>   test i failed
#   E <error>       the solution failed before any test ran
#   T <error>       the task's test code does not parse
#   D <n>           the end: n tests were run
# A test is one element of a list, or in a string each top-level `assert`
# and each top-level expression (`check(candidate)`); its other statements
# (imports, definitions) run in order as setup.
#
# The tests and the nonce are read and standard input closed before the
# solution runs, so the solution cannot read them again from there. The
# solution runs in this interpreter and could find them in its memory; the
# nonce only keeps a solution that exits early (os._exit(0), sys.exit()) or
# prints look-alike lines from passing. docs/sandbox.md says what is and is
# not guarded.
import ast
import json
import os
import sys

_write = os.write
_close = os.close


def _main():
    request = json.loads(sys.stdin.buffer.read().decode("utf-8", "replace"))
    # stdin is a memfd: closed, nothing can seek back to the start of it
    _close(0)
    os.open(os.devnull, os.O_RDONLY)
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    nonce = request["nonce"]

    def say(line):
        line = line.replace("\n", " ").replace("\r", " ")
        _write(3, (nonce + " " + line + "\n").encode("utf-8", "replace"))

    def describe(e):
        text = str(e).replace("\n", " ")
        return (type(e).__name__ + (": " + text if text else ""))[:200]

    asserts = request["asserts"]
    tests, setup = [], []  # tests[i] = code; setup: (position, code) run before tests[position]
    try:
        if isinstance(asserts, list):
            for i, text in enumerate(asserts):
                tests.append(compile(text, "test %d" % (i + 1), "exec"))
        else:
            tree = ast.parse(asserts, "tests")
            for node in tree.body:
                code = compile(ast.Module(body=[node], type_ignores=[]), "tests", "exec")
                if isinstance(node, (ast.Assert, ast.Expr)):
                    tests.append(code)
                else:
                    setup.append((len(tests), code))
    except SyntaxError as e:
        say("T line %s: %s" % (e.lineno, e.msg))
        return
    say("S %d" % len(tests))

    try:
        with open("/box/solution.py", encoding="utf-8", errors="replace") as f:
            source = f.read()
        program = compile(source, "solution.py", "exec")
    except SyntaxError as e:
        say("E SyntaxError: line %s: %s" % (e.lineno, e.msg))
        return
    # not "__main__": a solution's `if __name__ == "__main__":` block (which
    # would read the input of a stdin task) does not run under function tests
    env = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        exec(program, env)
    except BaseException as e:  # SystemExit too: exiting is not passing
        say("E " + describe(e))
        return

    broken = None  # a failed setup statement fails the tests after it
    s = 0
    for i, code in enumerate(tests):
        while s < len(setup) and setup[s][0] <= i:
            if broken is None:
                try:
                    exec(setup[s][1], env)
                except BaseException as e:
                    broken = describe(e)
            s += 1
        if broken is not None:
            say("F %d %s" % (i, broken))
            continue
        try:
            exec(code, env)
            say("P %d" % i)
        except BaseException as e:
            say("F %d %s" % (i, describe(e)))
    say("D %d" % len(tests))


_main()
sys.stdout.flush()
os._exit(0)
