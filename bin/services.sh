# Start (or install, on a fresh Debian machine as root) PostgreSQL and Redis at 127.0.0.1 default ports.
# Sourced by bin/test.

_pg_ready() { command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; }

ensure_postgres() {
  _pg_ready && return 0
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then echo "PostgreSQL is not installed (apt-get install -y postgresql)" >&2; return 1; fi
    echo "Installing PostgreSQL ..." >&2
    [ -f /tmp/.contextviewer-apt-updated ] || { apt-get update -qq && touch /tmp/.contextviewer-apt-updated; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null || return 1
  fi
  local version; version=$(ls /etc/postgresql | sort -V | tail -1)
  local hba=/etc/postgresql/$version/main/pg_hba.conf
  # Tests connect as postgres over TCP without a password (as on the CI machines).
  if [ -w "$hba" ] && ! grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
    sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  fi
  pg_ctlcluster --skip-systemctl-redirect "$version" main start 2>/dev/null || pg_ctlcluster "$version" main start || true
  for _ in $(seq 1 30); do _pg_ready && return 0; sleep 1; done
  echo "PostgreSQL did not start at 127.0.0.1:5432" >&2; return 1
}

ensure_redis() {
  redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return 0
  if ! command -v redis-server >/dev/null; then
    if [ "$(id -u)" != 0 ]; then echo "Redis is not installed (apt-get install -y redis-server)" >&2; return 1; fi
    echo "Installing Redis ..." >&2
    [ -f /tmp/.contextviewer-apt-updated ] || { apt-get update -qq && touch /tmp/.contextviewer-apt-updated; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null || return 1
  fi
  mkdir -p /tmp/contextviewer-redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --dir /tmp/contextviewer-redis >/dev/null
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return 0; sleep 1; done
  echo "Redis did not start at 127.0.0.1:6379" >&2; return 1
}
