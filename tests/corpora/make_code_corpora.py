#!/usr/bin/env python3
"""make_code_corpora.py: writes tests/corpora/code.jsonl and code_hostile.jsonl.

The programs are kept here as readable source; the corpora are what the
tests read (tests/plugins/test_code_reward.c). Run it after changing a case:

    python3 tests/corpora/make_code_corpora.py

Each line is a code task (language, tests and/or asserts), a "response" with
the program in a fenced block, the reward the plugin must give ("expect"), a
phrase its reason must hold ("reason"), and why the case is there. In the
hostile corpus the test replaces these before scoring:
    @SECRET@   a file in the test's run directory that must stay unreadable
    @OUTSIDE@  a path in the run directory that must stay unwritten
    @PORT@     a TCP port on 127.0.0.1 the test listens on
    @MARK@     a word the test looks for among live processes afterwards
    @TERNPID@  the test process's pid
A hostile program that is contained prints "contained"; its task expects
exactly that, so any escape lowers the reward and fails the test.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def fence(lang, src):
    return "Here is my solution.\n```%s\n%s\n```\n" % (lang, src.strip("\n"))


def case(id, lang, src, expect, reason, why, tests=None, asserts=None, raw=None, **extra):
    t = {"id": id, "language": lang}
    if tests is not None:
        t["tests"] = [{"stdin": i, "stdout": o} for i, o in tests]
    if asserts is not None:
        t["asserts"] = asserts
    t.update(extra)
    t["response"] = raw if raw is not None else fence(lang, src)
    t["expect"] = expect
    t["reason"] = reason
    t["why"] = why
    return t


DOUBLE = [("5\n", "10\n"), ("7\n", "14"), ("-3\n", "-6\n")]
CONTAINED = [("", "contained\n")]

ordinary = [
    # ---- python, stdin/stdout ----
    case("py-correct", "python", "n = int(input())\nprint(2 * n)", 1, "passed 3/3",
         "a correct solution passes every case", DOUBLE),
    case("py-wrong", "python", "n = int(input())\nprint(n + 5)", 1 / 3, "wrong answer",
         "a wrong solution passes only the case it happens to get right (5 -> 10)", DOUBLE),
    case("py-crash", "python", "n = int(input())\nprint(2 * n // (n - 5))", 0, "ZeroDivisionError",
         "a crash on the first case is a runtime error with the exception named; the others are wrong",
         [("5\n", "10\n")]),
    case("py-crash-some", "python", "n = int(input())\nassert n > 0\nprint(2 * n)", 2 / 3,
         "runtime error", "a crash on one case costs that case only", DOUBLE),
    case("py-slow", "python", "import time\nn = int(input())\ntime.sleep(30)\nprint(2 * n)", 0,
         "time limit", "a solution slower than time_ms fails every case", [("5\n", "10\n")]),
    case("py-syntax", "python", "def f(:\n  pass", 0, "SyntaxError",
         "a syntax error fails every case", [("1\n", "2\n")]),
    case("py-exit-code", "python", "import sys\nprint(10)\nsys.exit(3)", 0, "exit 3",
         "a right output with a failing exit status is a runtime error", [("5\n", "10\n")]),
    case("py-whitespace", "python", "print('10   ')\nprint()\nprint()", 1, "passed 1/1",
         "trailing spaces and blank lines do not matter", [("5\n", "10\n")]),
    case("py-tokens", "python", "print(1, 2)\nprint(3)", 1, "passed 1/1",
         "whitespace-separated tokens are compared, not lines", [("", "1\n2 3\n")]),
    case("py-float-exact", "python", "print(0.1 + 0.2)", 0, "wrong answer",
         "without a tolerance numbers compare as text", [("", "0.3\n")]),
    case("py-float-tol", "python", "print(0.1 + 0.2)", 1, "passed 1/1",
         "a task's abs_tolerance lets 0.30000000000000004 match 0.3", [("", "0.3\n")],
         abs_tolerance=1e-9),
    case("py-big-input", "python", "import sys\nprint(sum(map(int, sys.stdin.read().split())))", 1,
         "passed 1/1", "a 600 KB input reaches the program whole",
         [(" ".join(str(i) for i in range(100000)) + "\n", str(sum(range(100000))) + "\n")]),
    case("py-stderr-ok", "python", "import sys\nprint('debug', file=sys.stderr)\nprint(10)", 1,
         "passed 1/1", "what goes to stderr does not count", [("5\n", "10\n")]),
    case("py-no-block", "python", None, 0, "no program",
         "a response without a code block is not run", [("5\n", "10\n")],
         raw="The answer is to print double the input."),
    case("py-other-block", "python", None, 0, "no program",
         "a block in another language is not run", [("5\n", "10\n")],
         raw="```bash\necho 10\n```"),
    case("py-last-block", "python", None, 1, "passed 1/1",
         "the last python block is the program",
         [("5\n", "10\n")], raw="```python\nprint('draft')\n```\nBetter:\n```python\nprint(10)\n```"),
    # ---- python, function tests ----
    case("py-asserts", "python", "def sq(x):\n    return x * x", 1, "passed 3/3",
         "each top-level assert is a test",
         asserts="assert sq(2) == 4\nassert sq(3) == 9\nassert sq(-1) == 1"),
    case("py-asserts-partial", "python", "def sq(x):\n    return x * 2", 1 / 3, "assert 2",
         "a failing assert fails that test only (2*2 == 4 passes)",
         asserts="assert sq(2) == 4\nassert sq(3) == 9\nassert sq(-1) == 1"),
    case("py-asserts-list", "python", "def add(a, b):\n    return a + b", 1, "passed 2/2",
         "a list of test strings is one test each",
         asserts=["assert add(1, 2) == 3", "x = add(2, 2)\nassert x == 4"]),
    case("py-asserts-setup", "python", "def sq(x):\n    return x * x", 1, "passed 2/2",
         "imports and definitions in the test code are setup, not tests",
         asserts="import math\ndef check(f):\n    assert f(3) == 9\ncheck(sq)\nassert math.isclose(sq(0.5), 0.25)"),
    case("py-asserts-missing", "python", "def other(x):\n    return x", 0, "NameError",
         "a missing function is a runtime error", asserts="assert sq(2) == 4"),
    case("py-asserts-main-guard", "python",
         "def sq(x):\n    return x * x\nif __name__ == '__main__':\n    print(sq(int(input())))", 1,
         "passed 1/1", "the solution's main block does not run under function tests",
         asserts="assert sq(4) == 16"),
    case("py-asserts-crash-import", "python", "raise RuntimeError('boom')\ndef sq(x):\n    return x * x",
         0, "RuntimeError: boom", "a solution that fails on import fails every test",
         asserts="assert sq(2) == 4\nassert sq(3) == 9"),
    case("py-asserts-slow", "python", "def sq(x):\n    while True:\n        pass", 0, "time limit",
         "a function that never returns runs into the time limit", asserts="assert sq(2) == 4"),
    case("py-both", "python", "def sq(x):\n    return x * x\nif __name__ == '__main__':\n    print(sq(int(input())))",
         1, "passed 3/3", "stdin cases and asserts together",
         [("3\n", "9\n"), ("4\n", "16\n")], asserts="assert sq(5) == 25"),
    # ---- c ----
    case("c-correct", "c", "#include <stdio.h>\nint main(void) {\n    int n;\n    if (scanf(\"%d\", &n) != 1) return 1;\n    printf(\"%d\\n\", 2 * n);\n    return 0;\n}",
         1, "passed 3/3", "a correct C solution passes every case", DOUBLE),
    case("c-wrong", "c", "#include <stdio.h>\nint main(void) {\n    int n;\n    scanf(\"%d\", &n);\n    printf(\"%d\\n\", n + 5);\n    return 0;\n}",
         1 / 3, "wrong answer", "a wrong C solution", DOUBLE),
    case("c-compile-error", "c", "int main(void) { return undefined_thing; }", 0, "compile error",
         "a compile error fails every case and says the compiler's first error", DOUBLE),
    case("c-segfault", "c", "int main(void) {\n    volatile int *p = 0;\n    return *p;\n}", 0,
         "SIGSEGV", "a crash is a runtime error naming the signal", [("", "0\n")]),
    case("c-abort", "c", "#include <stdlib.h>\nint main(void) { abort(); }", 0, "SIGABRT",
         "abort() is a runtime error", [("", "0\n")]),
    case("c-slow", "c", "int main(void) {\n    volatile unsigned long i = 0;\n    for (;;) i++;\n}", 0,
         "time limit", "a C program that never ends hits the time limit", [("", "0\n")]),
    case("c-math", "c", "#include <math.h>\n#include <stdio.h>\nint main(void) {\n    double x;\n    scanf(\"%lf\", &x);\n    printf(\"%.6f\\n\", sqrt(x));\n    return 0;\n}",
         1, "passed 1/1", "the maths library is linked", [("2\n", "1.414214\n")]),
    case("c-exit-code", "c", "#include <stdio.h>\nint main(void) { puts(\"0\"); return 4; }", 0, "exit 4",
         "a failing exit status is a runtime error", [("", "0\n")]),
    case("c-asserts", "c", "int main(void) { return 0; }", 0, "asserts",
         "asserts are Python: a C task with them is malformed", asserts="assert True"),
    # ---- malformed tasks ----
    case("task-no-tests", "python", "print(1)", 0, "no tests", "a task without tests"),
    case("task-bad-tests", "python", "print(1)", 0, "test 1", "a test without stdout",
         tests=None, **{"tests_raw": True}),
    case("task-bad-language", "rust", "fn main() {}", 0, "language", "a language the plugin does not run",
         [("", "")]),
]
# a test case without "stdout"
for c in ordinary:
    if c.pop("tests_raw", False):
        c["tests"] = [{"stdin": "1\n"}]


hostile = [
    # ---- processes ----
    case("fork-bomb-py", "python",
         "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass", 0,
         "time limit", "a fork bomb meets the process limit, then the time limit; all of it is killed",
         CONTAINED),
    case("fork-bomb-c", "c", "#include <unistd.h>\nint main(void) {\n    for (;;) fork();\n}", 0,
         "time limit", "a fork bomb in C", CONTAINED),
    case("thread-bomb-py", "python",
         "import threading, time\nn = 0\ntry:\n    while True:\n        threading.Thread(target=time.sleep, args=(100,), daemon=True).start()\n        n += 1\nexcept RuntimeError:\n    print('contained' if n < 100 else 'ESCAPED %d' % n)",
         1, "passed 1/1", "threads count against the process limit", CONTAINED),
    case("daemon-py", "python",
         "import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(1000)', '@MARK@'])\n    os._exit(0)\nprint('contained')",
         1, "passed 1/1", "a daemonised grandchild is killed when the run ends (the test looks for it)",
         CONTAINED),
    case("daemon-c", "c",
         "#include <stdio.h>\n#include <unistd.h>\nint main(void) {\n    if (fork() == 0) {\n        setsid();\n        if (fork() == 0) {\n            execl(\"/usr/bin/python3\", \"python3\", \"-c\", \"import time; time.sleep(1000)\", \"@MARK@\", (char *)0);\n            _exit(1);\n        }\n        _exit(0);\n    }\n    puts(\"contained\");\n    return 0;\n}",
         1, "passed 1/1", "a daemon started from C", CONTAINED),
    case("kill-parent", "python",
         "import os, signal\nfor pid in (os.getppid(), 1, -1, @TERNPID@):\n    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\nprint('contained')",
         1, "passed 1/1", "signals to the parent, to init, to everyone and to tern's pid reach nothing outside",
         CONTAINED),
    case("ptrace-c", "c",
         "#include <errno.h>\n#include <stdio.h>\n#include <sys/ptrace.h>\n#include <unistd.h>\nint main(void) {\n    long a = ptrace(PTRACE_ATTACH, getppid(), 0, 0);\n    long b = ptrace(PTRACE_TRACEME, 0, 0, 0);\n    long c = ptrace(PTRACE_ATTACH, @TERNPID@, 0, 0);\n    puts(a == -1 && b == -1 && c == -1 ? \"contained\" : \"ESCAPED\");\n    return 0;\n}",
         1, "passed 1/1", "ptrace is refused (seccomp)", CONTAINED),
    case("unshare-c", "c",
         "#define _GNU_SOURCE\n#include <sched.h>\n#include <stdio.h>\n#include <sys/mount.h>\nint main(void) {\n    int a = unshare(CLONE_NEWUSER);\n    int b = unshare(CLONE_NEWNS);\n    int c = mount(\"none\", \"/tmp\", \"tmpfs\", 0, 0);\n    puts(a == -1 && b == -1 && c == -1 ? \"contained\" : \"ESCAPED\");\n    return 0;\n}",
         1, "passed 1/1", "no namespaces or mounts of its own", CONTAINED),
    # ---- memory and time ----
    case("memory-bomb-py", "python", "x = []\nwhile True:\n    x.append(bytearray(10 ** 7))", 0,
         "memory limit", "a memory bomb hits the address-space limit", CONTAINED),
    case("memory-bomb-c", "c",
         "#include <stdlib.h>\n#include <string.h>\nint main(void) {\n    for (;;) {\n        char *p = malloc(1 << 20);\n        memset(p, 1, 1 << 20);\n    }\n}",
         0, "memory limit", "a C memory bomb crashes at the limit, reported as memory", CONTAINED),
    case("infinite-loop-py", "python", "while True:\n    pass", 0, "time limit",
         "a busy loop", CONTAINED),
    case("sleep-forever-py", "python", "import time\ntime.sleep(10 ** 6)", 0, "time limit",
         "sleeping uses no CPU: the wall-clock limit ends it", CONTAINED),
    # ---- files ----
    case("read-outside-py", "python",
         "import os\nleaks = []\nfor p in ('/etc/shadow', '@SECRET@', '/root/.bashrc', '/proc/self/environ', '/proc/1/cmdline', '/home', '/root', '/work', '/run', '/sys/kernel', '/var/log'):\n    try:\n        if os.path.isdir(p):\n            os.listdir(p)\n        else:\n            open(p, 'rb').read()\n        leaks.append(p)\n    except OSError:\n        pass\nprint('contained' if not leaks else 'ESCAPED ' + ' '.join(leaks))",
         1, "passed 1/1", "files outside the sandbox's view (the run directory, /root, /etc/shadow) cannot be read",
         CONTAINED),
    case("read-secret-c", "c",
         "#include <stdio.h>\nint main(void) {\n    FILE *f = fopen(\"@SECRET@\", \"r\");\n    FILE *g = fopen(\"/etc/shadow\", \"r\");\n    puts(!f && !g ? \"contained\" : \"ESCAPED\");\n    return 0;\n}",
         1, "passed 1/1", "the same from C", CONTAINED),
    case("include-secret-c", "c", "#include \"@SECRET@\"\nint main(void) { return 0; }", 0,
         "compile error", "the compiler runs in the sandbox too: #include cannot read the host",
         CONTAINED),
    case("write-outside-py", "python",
         "import os\nwrote = []\nfor p in ('@OUTSIDE@', '/usr/tern-escape', '/etc/tern-escape', '/tern-escape', '/dev/tern-escape', '/bin/tern-escape'):\n    try:\n        with open(p, 'w') as f:\n            f.write('x')\n        wrote.append(p)\n    except OSError:\n        pass\nopen('/box/mine', 'w').write('ok')\nopen('/tmp/mine', 'w').write('ok')\nprint('contained' if not wrote else 'ESCAPED ' + ' '.join(wrote))",
         1, "passed 1/1", "nothing outside /box and /tmp is writable; those are", CONTAINED),
    case("fill-tmp-py", "python",
         "import os\ni = 0\ntry:\n    while True:\n        with open('/tmp/f%d' % i, 'wb') as f:\n            f.write(b'x' * (4 << 20))\n        i += 1\nexcept OSError:\n    pass\nprint('contained' if i < 64 else 'ESCAPED')",
         1, "passed 1/1", "/tmp fills up at tmpfs_mb (in memory, gone after the run)", CONTAINED),
    case("big-file-py", "python",
         "try:\n    with open('/box/big', 'wb') as f:\n        f.write(b'x' * (64 << 20))\n    print('ESCAPED')\nexcept OSError:\n    print('contained')",
         1, "passed 1/1", "one file larger than file_mb is refused", CONTAINED),
    case("open-files-py", "python",
         "fs = []\ntry:\n    while True:\n        fs.append(open('/dev/null'))\nexcept OSError:\n    pass\nprint('contained' if len(fs) < 1000 else 'ESCAPED')",
         1, "passed 1/1", "descriptors are limited", CONTAINED),
    # ---- network ----
    case("connect-local-py", "python",
         "import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', @PORT@), timeout=2)\n    print('ESCAPED')\nexcept OSError:\n    print('contained')",
         1, "passed 1/1", "the test's server on 127.0.0.1 is unreachable (no network, no AF_INET)",
         CONTAINED),
    case("connect-local-c", "c",
         "#include <arpa/inet.h>\n#include <stdio.h>\n#include <sys/socket.h>\nint main(void) {\n    int s = socket(AF_INET, SOCK_STREAM, 0);\n    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(@PORT@)};\n    a.sin_addr.s_addr = htonl(0x7f000001);\n    int r = s < 0 ? -1 : connect(s, (struct sockaddr *)&a, sizeof a);\n    puts(r == -1 ? \"contained\" : \"ESCAPED\");\n    return 0;\n}",
         1, "passed 1/1", "the same from C", CONTAINED),
    # ---- output ----
    case("huge-output-py", "python", "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)", 0,
         "output limit", "endless output is cut at output_kb and fails", CONTAINED),
    case("huge-stderr-py", "python", "import sys\nfor i in range(20000):\n    sys.stderr.write('y' * 1000)\nprint('contained')",
         1, "passed 1/1", "endless stderr is kept as head and tail only, and does not fail", CONTAINED),
    # ---- reward hacking ----
    case("exit-early-py", "python", "import os\nos._exit(0)", 0, "did not finish",
         "exiting before the function tests is not passing", asserts="assert f(1) == 2"),
    case("sys-exit-py", "python", "import sys\nsys.exit(0)", 0, "SystemExit",
         "sys.exit() at import is not passing", asserts="assert f(1) == 2"),
    case("forge-lines-py", "python",
         "import os\nfor fd in range(3, 64):\n    for i in range(4):\n        try:\n            os.write(fd, b'S 1\\nP 0\\nD 1\\n')\n        except OSError:\n            pass\nos._exit(0)",
         0, "did not finish", "look-alike harness lines without the nonce count for nothing",
         asserts="assert f(1) == 2"),
    case("read-tests-py", "python",
         "import os, sys\ndata = b''\ntry:\n    os.lseek(0, 0, 0)\n    data = os.read(0, 1 << 16)\nexcept OSError:\n    pass\ndef f(x):\n    return 'nonce' in data.decode() and x + 1\n",
         0, "assert 1", "the tests and the nonce are gone from stdin before the solution runs",
         asserts="assert f(1) == 2"),
]


def write(name, cases):
    path = os.path.join(HERE, name)
    with open(path, "w") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print("%s: %d cases" % (path, len(cases)))


write("code.jsonl", ordinary)
write("code_hostile.jsonl", hostile)
