# lib.sh: tiny test helpers for the packaging tests (sourced).
passed=0
failed=0
ok()   { passed=$((passed + 1)); echo "ok - $*"; }
fail() { failed=$((failed + 1)); echo "FAIL - $*"; }
# check DESCRIPTION COMMAND...: run the command, log its output, count the result
check() {
  local what=$1; shift
  if "$@" >"$WORK/last.log" 2>&1; then ok "$what"; else fail "$what"; sed 's/^/    /' "$WORK/last.log" | tail -n 40; fi
}
finish() {
  echo "packaging: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
