#!/usr/bin/env bash
# Installs the Debian packages the tests drive: the real sysbench, the
# mariadb client, HAProxy (in front of the playground's SQL nodes),
# Chromium (headless, for the dashboard's test in e2e), the ORM tests'
# Python packages, and,
# with --with-server, mariadb-server for the side-by-side comparisons.
# Does nothing when they are already there.
set -euo pipefail
need=()
command -v sysbench >/dev/null 2>&1 || need+=(sysbench)
command -v mariadb >/dev/null 2>&1 || need+=(mariadb-client)
command -v haproxy >/dev/null 2>&1 || need+=(haproxy)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
if [ "${1:-}" = "--with-server" ]; then
  command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
fi
# The ORM tests' Python packages (e2e/orm_test.go), pinned, from PyPI:
# Django 5.2 LTS (6.x wants Python 3.12), SQLAlchemy, PyMySQL. Without
# them TestORMs skips, so a failed install warns rather than stops.
python=${BASALT_PYTHON:-python3}
if command -v "$python" >/dev/null 2>&1 && ! "$python" -c "import django, sqlalchemy, pymysql" >/dev/null 2>&1; then
  "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    django==5.2.19 sqlalchemy==2.1.9 pymysql==1.2.4 ||
    echo "test-deps: could not install Django/SQLAlchemy/PyMySQL: TestORMs will skip" >&2
fi
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
