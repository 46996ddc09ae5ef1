#!/usr/bin/env bash
# Lints the workshop image's files; fast (seconds once npm packages are cached), no network
# beyond npm, no container engine. CI runs it on every push.
#
#   - docker/Dockerfile with two npm linters pinned in docker/lint/package-lock.json:
#     dockerfile-utils (the parser and validator behind VS Code's Dockerfile support) and
#     dockerfilelint (best-practice rules). hadolint cannot be installed offline here.
#     Any diagnostic, warning or error, fails the lint.
#   - the shell scripts in docker/ and docker/hub/ with `bash -n`, and with shellcheck when it is
#     installed (Debian package shellcheck).
#   - docker/hub/z2jh/values.yaml against the Zero to JupyterHub chart's schema
#     (docker/hub/z2jh/validate.py, with the lab's .venv: jsonschema, PyYAML).
#   - docker/hub's unit tests (hubsettings_test.py, spawnfaults_test.py: python3, no venv).
#
# Usage: docker/lint.sh [Dockerfile]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dockerfile="${1:-$here/Dockerfile}"
lintdir="$here/lint"

if ! command -v npm >/dev/null; then
  echo "lint.sh: npm is not installed (Debian: apt-get install npm, or Node.js 18+)" >&2
  exit 2
fi
# npm ci installs exactly the lock file; skip it when node_modules already matches.
if ! cmp -s "$lintdir/package-lock.json" "$lintdir/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$lintdir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  cp "$lintdir/package-lock.json" "$lintdir/node_modules/.package-lock.json.installed"
fi

status=0

echo "== dockerfile-utils $(node -p "require('$lintdir/node_modules/dockerfile-utils/package.json').version") lint $dockerfile"
# It exits 1 on errors but 0 on warnings: the JSON list decides.
json="$("$lintdir/node_modules/.bin/dockerfile-utils" lint -j "$dockerfile" || true)"
# shellcheck disable=SC2016 # JavaScript template literals, not shell expansions
if ! node -e '
  const d = JSON.parse(process.argv[1]);
  for (const x of d) console.log(`${process.argv[2]}:${x.range.start.line + 1}: ${x.severity}: ${x.message}`);
  process.exit(d.length ? 1 : 0);' "$json" "$dockerfile"; then
  status=1
else
  echo "no diagnostics"
fi

echo "== dockerfilelint $(node -p "require('$lintdir/node_modules/dockerfilelint/package.json').version") $dockerfile"
# dockerfilelint exits non-zero when it reports anything.
if ! "$lintdir/node_modules/.bin/dockerfilelint" -c "$lintdir" "$dockerfile"; then
  status=1
fi

echo "== shell scripts"
for f in "$here"/*.sh "$here"/hub/*.sh; do
  bash -n "$f" || status=1
done
if command -v shellcheck >/dev/null; then
  scripts=("$here"/*.sh "$here"/hub/*.sh)
  shellcheck -x "${scripts[@]}" || status=1
  echo "shellcheck $(shellcheck --version | sed -n 's/^version: //p'): ${#scripts[@]} scripts"
else
  echo "shellcheck not installed: only bash -n (apt-get install shellcheck for more)"
fi

echo "== Zero to JupyterHub values"
venv_py="$here/../.venv/bin/python"
if [ -x "$venv_py" ]; then
  "$venv_py" "$here/hub/z2jh/validate.py" || status=1
else
  echo "no .venv (kernel/setup.sh makes it): docker/hub/z2jh/values.yaml not validated" >&2
  status=1
fi

echo "== docker/hub unit tests (the capacity line, the words of a failed spawn; standard library only)"
(cd "$here/hub" && python3 -m unittest -q hubsettings_test spawnfaults_test) || status=1

if [ "$status" -ne 0 ]; then
  echo "lint.sh: FAILED" >&2
else
  echo "lint.sh: ok"
fi
exit "$status"
