# run.py: how the python tool runs a call's code (python_tool.c embeds this
# file and starts it as `python3 -I -u /box/run.py` in a fresh sandbox).
#
# It runs /box/main.py, the call's code, the way `python3 main.py` would (as
# module __main__), then, as the interactive interpreter does, prints the
# value of the last statement when that is an expression whose value is not
# None: a model that ends its code with `x * 2` sees the answer. An error's
# traceback shows the code's own frames, not this file's; the exit status is
# 1 after an error, as python3's, and what sys.exit() gives.
import ast
import sys
import types

PATH = "/box/main.py"
# this file's module, held here: its globals stay alive once the code's
# module takes its place as __main__
RUNNER = sys.modules["__main__"]


def report(e, tb):
    """Prints e as an uncaught error with traceback tb (python3's format, the
    code's sys.excepthook if it set one) and gives python3's exit status."""
    # the hook prints e's own traceback, whatever tb it is given
    e.__traceback__ = tb
    sys.excepthook(type(e), e, tb)
    return 1


def main():
    with open(PATH, "rb") as f:
        source = f.read()
    try:
        tree = ast.parse(source, PATH)
    except (SyntaxError, ValueError) as e:  # ValueError: a NUL byte (before Python 3.12)
        return report(e, None)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    module = types.ModuleType("__main__")
    module.__file__ = PATH
    sys.modules["__main__"] = module
    sys.argv = [PATH]
    try:
        exec(compile(tree, PATH, "exec"), module.__dict__)
        if last is not None:
            sys.displayhook(eval(compile(last, PATH, "eval"), module.__dict__))
    except SystemExit:
        raise
    except BaseException as e:
        # the traceback's first frame is this function's; the code's follow
        # (None: compile() refused the code, e.g. `return` outside a function)
        return report(e, e.__traceback__.tb_next)
    return 0


sys.exit(main())
