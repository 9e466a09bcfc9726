#!/usr/bin/env bash
# Installs the PostgreSQL server for the tests (harnessx-testkit starts its own throwaway
# clusters with initdb + pg_ctl; no service is started here). Does nothing when `initdb` is
# already on PATH or under /usr/lib/postgresql/*/bin. Debian/Ubuntu, as root.
set -euo pipefail

found=""
if command -v initdb >/dev/null 2>&1; then
  found="$(command -v initdb)"
else
  for candidate in /usr/lib/postgresql/*/bin/initdb; do
    if [[ -x "$candidate" ]]; then found="$candidate"; fi
  done
fi

if [[ -n "$found" ]]; then
  echo "PostgreSQL already installed: $found ($("$found" --version))"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# postgresql-common's postinst creates a default cluster (and on systemd machines starts it);
# tests never use it. Skip creating it where the configuration allows.
mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/harnessx-no-main.conf
apt-get install -y -qq --no-install-recommends postgresql >/dev/null

for candidate in /usr/lib/postgresql/*/bin/initdb; do
  if [[ -x "$candidate" ]]; then found="$candidate"; fi
done
if [[ -z "$found" ]]; then
  echo "error: apt-get installed postgresql but no initdb is under /usr/lib/postgresql/*/bin" >&2
  exit 1
fi
echo "PostgreSQL installed: $found ($("$found" --version))"
