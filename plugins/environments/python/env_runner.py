# env_runner.py: the `python` environment's worker, the Python side of the
# line protocol in env_protocol.h. tern runs it as
#   PYTHON -u -c "<this file>" FILE CLASS OBSERVATION_MAX
# in the config's directory. It loads CLASS from FILE and says
# {"ready": true} (or {"error": ...} and exits when it cannot), then keeps
# one instance of CLASS per episode, in a dict by the episode's id:
#   {"op": "reset", "id": N, "seed": S, "task": {...}}  makes CLASS(S) or
#       CLASS() and answers {"observation": str|null} from its reset(task)
#   {"op": "step", "id": N, "action": "..."}  answers {"observation",
#       "reward", "done"[, "reason"]} from its step(action)
#   {"op": "close", "id": N}  drops the instance; no answer
#   {"op": "call", "id": N, "name": F, "arguments": {...}, "max": BYTES}
#       calls the tool F (the class's `tools`: a function, or a method of
#       the episode's instance when its first parameter is self) and answers
#       {"status": "ok"|"invalid"|"failed", "output": str, "truncated": bool}
# The ready line lists the tools' JSON schemas: {"ready": true, "tools": [...]}.
# An exception is {"error": "Type: message (file:line)"}, an answer of the
# wrong shape {"garbage": "what is wrong"}: that episode ends, the others go
# on. The protocol has its own descriptor: fd 1 (print(), a C library's
# printf) is pointed at stderr, so what the user's code prints is log.
import importlib.util
import inspect
import json
import math
import numbers
import os
import sys
import traceback

protocol = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
sys.stdout = sys.stderr

MESSAGE_MAX = 100  # of an exception's message: the reason keeps its file:line


class Garbage(Exception):
    """An answer of the wrong shape or type."""


def say(obj):
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"
    protocol.write(text.encode("utf-8", "replace"))  # a lone surrogate is no crash
    protocol.flush()


def where(exc):
    """Type: message (file:line) of the innermost frame in the user's file."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if f.filename == path]
    at = f" ({os.path.basename(path)}:{mine[-1].lineno})" if mine else ""
    msg = str(exc)
    if len(msg) > MESSAGE_MAX:
        msg = msg[:MESSAGE_MAX - 3] + "..."
    return f"{type(exc).__name__}: {msg}{at}"


def shape(value):
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def observation(value, what):
    if value is None:
        return None
    if not isinstance(value, str):
        raise Garbage(f"{what} must be a str or None, not {type(value).__name__}")
    n = len(value.encode("utf-8", "replace"))
    if n > observation_max:
        raise Garbage(f"{what} is {n} bytes, over the {observation_max} tern takes")
    return value


def reward(value):
    # bool is an int, but a bool reward is most likely (obs, done, reward)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise Garbage(f"the reward must be a number, not {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise Garbage(f"the reward is {value}, not a finite number")
    return value


def flag(value, what):
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ == "bool_":
        return bool(value)
    raise Garbage(f"{what} must be a bool, not {type(value).__name__}")


def reset_answer(value):
    # Gymnasium's reset answers (observation, info)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict):
        value = value[0]
    return {"observation": observation(value, "reset()'s observation")}


def step_answer(value):
    if not isinstance(value, (tuple, list)) or len(value) not in (3, 4, 5):
        raise Garbage("step() must return (observation, reward, done), with an info dict "
                      f"after them, or Gymnasium's 5-tuple; it returned {shape(value)}")
    info = None
    if len(value) == 5:  # (observation, reward, terminated, truncated, info)
        done = flag(value[2], "terminated") | flag(value[3], "truncated")
        info = value[4]
    else:
        done = flag(value[2], "done")
        info = value[3] if len(value) == 4 else None
    out = {"observation": observation(value[0], "the observation"),
           "reward": reward(value[1]), "done": done}
    if out["observation"] is None and not done:
        raise Garbage("the observation is None but the episode is not done")
    if isinstance(info, dict) and isinstance(info.get("reason"), str):
        out["reason"] = info["reason"]
    return out


def load(class_name):
    spec = importlib.util.spec_from_file_location("tern_environment", path)
    if spec is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls = getattr(module, class_name, None)
    name = os.path.basename(path)
    if not inspect.isclass(cls):
        raise AttributeError(f"{name} has no class '{class_name}'")
    for method in ("reset", "step"):
        if not callable(getattr(cls, method, None)):
            raise AttributeError(f"class '{class_name}' in {name} has no method {method}()")
    try:  # __init__(self, seed) is given the episode's seed, __init__(self) nothing
        inspect.signature(cls).bind(0)
        return cls, True
    except (TypeError, ValueError):
        return cls, False


JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean",
              list: "array", dict: "object", tuple: "array"}


def json_type(annotation):
    """The JSON schema type of a parameter's annotation (None: any)."""
    origin = getattr(annotation, "__origin__", None) or annotation
    if isinstance(origin, str):  # from __future__ import annotations
        origin = {"int": int, "float": float, "str": str, "bool": bool, "list": list,
                  "dict": dict}.get(origin.split("[")[0], None)
    return JSON_TYPES.get(origin)


def docstring_parts(fn):
    """The description (the docstring's first paragraph) and each argument's
    line under "Args:" (Google style, as transformers' get_json_schema reads)."""
    doc = inspect.getdoc(fn) or ""
    head, _, rest = doc.partition("\n\n")
    args = {}
    if "Args:" in doc:
        for line in doc.split("Args:", 1)[1].splitlines():
            name, sep, text = line.strip().partition(":")
            if sep and name and " " not in name.strip():
                args[name.strip()] = text.strip()
    return " ".join(head.split()), args


def schema_of(fn):
    """The function's JSON schema as chat templates take it."""
    sig = inspect.signature(fn)
    description, docs = docstring_parts(fn)
    props, required = {}, []
    for i, (name, p) in enumerate(sig.parameters.items()):
        if i == 0 and name == "self":
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {fn.__name__}() takes *args or **kwargs: name its "
                            "parameters, the model calls it with a JSON object")
        prop = {}
        kind = json_type(p.annotation) if p.annotation is not p.empty else None
        if kind:
            prop["type"] = kind
        if name in docs:
            prop["description"] = docs[name]
        props[name] = prop
        if p.default is p.empty:
            required.append(name)
    return {"type": "function",
            "function": {"name": fn.__name__, "description": description or fn.__name__,
                         "parameters": {"type": "object", "properties": props,
                                        "required": required}}}


def tools_of(cls):
    """The class's `tools`: name -> (function, is_method), and their schemas."""
    found, schemas = {}, []
    listed = getattr(cls, "tools", None) or []
    if not isinstance(listed, (list, tuple)):
        raise TypeError(f"class '{cls.__name__}'s tools must be a list of functions, "
                        f"not {type(listed).__name__}")
    for fn in listed:
        fn = getattr(fn, "__func__", fn)  # a staticmethod
        if not callable(fn) or not hasattr(fn, "__name__"):
            raise TypeError(f"class '{cls.__name__}'s tools holds {fn!r}, not a function")
        params = list(inspect.signature(fn).parameters)
        found[fn.__name__] = (fn, bool(params) and params[0] == "self")
        schemas.append(schema_of(fn))
    return found, schemas


def text_of(value):
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def cut(text, limit):
    """text in at most `limit` UTF-8 bytes, cut at a character, and whether it was."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return data.decode("utf-8"), False
    return data[:limit].decode("utf-8", "ignore"), True


def call_answer(request):
    name = request.get("name")
    limit = int(request.get("max", 2048))
    entry = tools.get(name)
    if entry is None:
        return {"status": "invalid", "output": f"no tool is named {name!r}", "truncated": False}
    fn, is_method = entry
    args = request.get("arguments") or {}
    env = episodes.get(request["id"])
    if is_method and env is None:
        return {"status": "failed", "output": "the episode is not in this worker",
                "truncated": False}
    bound = (lambda **kw: fn(env, **kw)) if is_method else fn
    try:
        inspect.signature(fn).bind(*([env] if is_method else []), **args)
    except TypeError as exc:
        return {"status": "invalid", "output": f"{name}(): {exc}", "truncated": False}
    try:
        out, truncated = cut(text_of(bound(**args)), limit)
        return {"status": "ok", "output": out, "truncated": truncated}
    except Exception as exc:
        out, truncated = cut(where(exc), limit)
        return {"status": "failed", "output": out, "truncated": truncated}


path, observation_max = os.path.abspath(sys.argv[1]), int(sys.argv[3])
try:
    sys.path.insert(0, os.path.dirname(path))
    Env, takes_seed = load(sys.argv[2])
    tools, schemas = tools_of(Env)
except BaseException as exc:  # a syntax error, a failed import, no such class
    say({"error": where(exc) if not isinstance(exc, SyntaxError) else
         f"SyntaxError: {exc.msg} ({os.path.basename(exc.filename or path)}:{exc.lineno})"})
    sys.exit(3)
say({"ready": True, "tools": schemas})

episodes = {}
for line in sys.stdin.buffer:
    request = json.loads(line)
    op, eid = request["op"], request["id"]
    if op == "close":
        episodes.pop(eid, None)
        continue
    if op == "call":
        say(call_answer(request))
        continue
    try:
        if op == "reset":
            env = Env(request["seed"]) if takes_seed else Env()
            episodes[eid] = env
            answer = reset_answer(env.reset(request["task"]))
        elif eid in episodes:
            answer = step_answer(episodes[eid].step(request["action"]))
        else:
            answer = {"error": f"episode {eid} is not in this worker"}
    except Garbage as exc:
        answer = {"garbage": str(exc)}
    except Exception as exc:
        answer = {"error": where(exc)}
    say(answer)
