# runner.py: the `python` reward plugin's side of the line protocol
# (plugins/rewards/exec/exec_protocol.h). tern runs it as
#   PYTHON -u -c "<this file>" FILE FUNCTION
# in the config's directory. It loads FUNCTION from FILE, says
# {"ready": true} (or {"error": ...} and exits when it cannot), then for each
# request line calls FUNCTION(response, task) and writes one verdict line:
# a float, or {"reward", "components", "reason"} from a dict. An exception
# is {"error": "Type: message (file:line)"}: that response fails, the next
# is judged. The protocol keeps descriptors of its own: fd 1 and fd 0 become
# stderr and /dev/null before the user's file loads, so whatever the
# function or what it runs writes (print, os.system, a subprocess, a C
# extension's printf) goes to stderr and can never be read as a verdict, and
# nothing it reads takes a request.
import importlib.util
import json
import math
import os
import sys
import traceback

protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
requests = os.fdopen(os.dup(0), "r", encoding="utf-8", errors="replace")
os.dup2(2, 1)
devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(devnull, 0)
os.close(devnull)
sys.stdout = sys.stderr
sys.stdin = open(os.devnull)


def say(obj):
    protocol.write(json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n")
    protocol.flush()


def where(exc):
    """Type: message (file:line) of the innermost frame in the user's file."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if f.filename == path]
    at = f" ({os.path.basename(path)}:{mine[-1].lineno})" if mine else ""
    return f"{type(exc).__name__}: {exc}{at}"


def number(value, what):
    if not isinstance(value, (int, float)):  # bool is an int: True is 1.0
        raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{what} is {value}, not a finite number")
    return float(value)


def verdict(value):
    if isinstance(value, dict):
        if "reward" not in value:
            raise TypeError("the dict the function returned has no 'reward'")
        out = {"reward": number(value["reward"], "'reward'")}
        comps = value.get("components") or {}
        if not isinstance(comps, dict):
            raise TypeError("'components' must be a dict of name: number")
        out["components"] = {str(k): number(v, f"component '{k}'") for k, v in comps.items()}
        if value.get("reason") is not None:
            out["reason"] = str(value["reason"])
        return out
    if isinstance(value, tuple) and len(value) == 2:
        return {"reward": number(value[0], "the reward"), "reason": str(value[1])}
    return number(value, "the function's result")


path, name = os.path.abspath(sys.argv[1]), sys.argv[2]
try:
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("tern_reward_" + name, path)
    if spec is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function = getattr(module, name, None)
    if not callable(function):
        raise AttributeError(f"{os.path.basename(path)} has no function '{name}'")
except BaseException as exc:  # a syntax error, a failed import, no such function
    say({"error": where(exc) if not isinstance(exc, SyntaxError) else
         f"SyntaxError: {exc.msg} ({os.path.basename(exc.filename or path)}:{exc.lineno})"})
    sys.exit(3)
say({"ready": True})

for line in requests:
    request = json.loads(line)
    try:
        reply = verdict(function(request["response"], request["task"]))
    except Exception as exc:
        reply = {"error": where(exc)}
    say(reply)
