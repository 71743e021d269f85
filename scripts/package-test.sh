#!/usr/bin/env bash
# The Debian package on this machine, as an operator would meet it (root only; CI runs it on a
# fresh machine): build it (scripts/package.sh), install it with dpkg, check the unit with
# systemd-analyze, start the service's command the way its unit does (user shardns, only
# CAP_NET_BIND_SERVICE, /run/shardns made for it), query it on 127.0.0.1:53, reload it through
# its control socket, check the modes of its state and runtime directories (the unit's,
# 0750), stop it, and purge the package (its user and state go with it).
# Without systemd as PID 1 (a container) systemctl cannot start units, hence setpriv.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "package-test: needs root (dpkg -i)" >&2; exit 1; }
need=()
command -v dig >/dev/null 2>&1 || need+=(bind9-dnsutils)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v adduser >/dev/null 2>&1 || need+=(adduser)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
if ((${#need[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
deb=$(scripts/package.sh | tail -1)
echo "package-test: $deb"
pid=
made_run=
run_before=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  dpkg --purge shardns >/dev/null 2>&1 || true
  # As systemd removes a RuntimeDirectory at stop: left behind, owned by a user the purge
  # deleted, it would be refused as root's default control socket directory.
  # One that was there before (root's, made by a `shardns serve` run as root) gets its owner
  # and mode back: taken over by the service's user, it would be refused the same way.
  [ -z "$made_run" ] || rm -rf /run/shardns
  if [ -n "$run_before" ]; then
    chown "${run_before% *}" /run/shardns && chmod "${run_before#* }" /run/shardns
  fi
}
trap cleanup EXIT
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >/dev/null
getent passwd shardns >/dev/null || { echo "package-test: no user shardns" >&2; exit 1; }
test -x /usr/sbin/shardns && test -f /etc/shardns/shardns.toml && test -f /usr/share/man/man5/shardns.toml.5.gz
man -w shardns >/dev/null 2>&1 || test -f /usr/share/man/man8/shardns.8.gz
unit=/usr/lib/systemd/system/shardns.service
# The unit's syntax, its executables and directives.
systemd-analyze verify "$unit"
# The unit's own commands, as its user, with its one capability and runtime directory.
start=$(sed -n 's/^ExecStart=//p' "$unit")
check=$(sed -n 's/^ExecStartPre=//p' "$unit")
# The directory modes the unit sets at every start (systemd's default would be 0755).
state_mode=$(sed -n 's/^StateDirectoryMode=//p' "$unit")
run_mode=$(sed -n 's/^RuntimeDirectoryMode=//p' "$unit")
[ "$state_mode" = 0750 ] && [ "$run_mode" = 0750 ] || {
  echo "package-test: the unit's StateDirectoryMode/RuntimeDirectoryMode are '$state_mode'/'$run_mode', not 0750" >&2
  exit 1
}
if [ -e /run/shardns ]; then run_before=$(stat -c '%u:%g %a' /run/shardns); else made_run=1; fi
install -d -o shardns -g shardns -m "$run_mode" /run/shardns
as_service=(setpriv --reuid=shardns --regid=shardns --init-groups --inh-caps=+net_bind_service
  --ambient-caps=+net_bind_service)
"${as_service[@]}" $check
if ss -Hlun 'sport = :53' | grep -q '127.0.0.1:53\b'; then
  echo "package-test: 127.0.0.1:53 is taken on this machine; the service was checked, not started" >&2
  exit 0
fi
# setpriv execs the server: $! is its PID.
"${as_service[@]}" $start >/tmp/shardns-package-test.log 2>&1 &
pid=$!
for _ in $(seq 100); do
  answer=$(dig +short +time=1 +tries=1 @127.0.0.1 www.example.test A || true)
  [ -n "$answer" ] && break
  sleep 0.1
done
[ -n "${answer:-}" ] || { echo "package-test: no answer; log:" >&2; cat /tmp/shardns-package-test.log >&2; exit 1; }
echo "package-test: the service answers www.example.test A: $answer"
"${as_service[@]}" /usr/sbin/shardns reload --control /run/shardns/shardns.ctl
# The state directory keeps postinst's mode while the service runs (keys are in it).
for d in /var/lib/shardns /var/lib/shardns/keys /run/shardns; do
  mode=$(stat -c %a "$d")
  [ "$mode" = 750 ] || { echo "package-test: $d has mode $mode, not 750" >&2; exit 1; }
done
echo "package-test: /var/lib/shardns, its keys and /run/shardns are 0750"
kill "$pid"; wait "$pid" || true; pid=
dpkg --purge shardns >/dev/null
! getent passwd shardns >/dev/null || { echo "package-test: user shardns left after purge" >&2; exit 1; }
echo "package-test: installed, started, answered, reloaded, modes checked, purged"
