#!/usr/bin/env bash
# Installs the Debian packages the tests drive: the real sysbench, the
# mariadb client, HAProxy (in front of the playground's SQL nodes),
# Chromium (headless, for the dashboard's test in e2e), and,
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
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
