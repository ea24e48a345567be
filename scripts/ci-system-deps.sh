#!/usr/bin/env bash
# Installs the system packages the test suite needs beyond node_modules:
# Debian's `prometheus` package (provides `prometheus` and `promtool`), used by
# test/infra/*.test.ts, and Debian's `chromium` (with a font for its screenshots), which
# test/ui/*.test.ts drive through playwright-core (never `playwright install`), and Debian's
# `faketime` (libfaketime), which the chaos scenario clock-jump preloads into the product to
# step its wall clock.
# Idempotent: installs only what is missing.
# The tests start their own Prometheus on a random loopback port, so any system
# service the package starts is stopped and kept from listening on :9090.
set -euo pipefail

# Root (or sudo) is needed only to install what is missing: with both packages present,
# `npm test` runs as any user.
SUDO=''
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO='sudo'
fi
need_root() {
  if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
    echo "ci-system-deps: $* is missing; installing it needs root or sudo" >&2
    exit 1
  fi
}

have_prometheus() {
  command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1
}

stop_system_prometheus() {
  # Debian's postinst starts prometheus.service (systemd) or /etc/init.d/prometheus.
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now prometheus.service >/dev/null 2>&1 || true
  fi
  if [ -x /etc/init.d/prometheus ]; then
    $SUDO /etc/init.d/prometheus stop >/dev/null 2>&1 || true
  fi
  # Without an init system the service may still have been spawned directly; stop only
  # the daemon started from the packaged binary with the packaged config, by pid.
  local pids
  pids="$(pgrep -x prometheus -u prometheus 2>/dev/null || true)"
  for pid in $pids; do
    $SUDO kill "$pid" 2>/dev/null || true
  done
}

have_chromium() { [ -x /usr/bin/chromium ]; }

have_faketime() { [ -n "$(dpkg -L libfaketime 2>/dev/null | grep -m1 '/libfaketime\.so\.1$')" ]; }

missing=()
have_prometheus || missing+=(prometheus)
have_chromium || missing+=(chromium fonts-dejavu-core)
have_faketime || missing+=(faketime)

if [ "${#missing[@]}" -eq 0 ]; then
  echo "ci-system-deps: prometheus, chromium and faketime already installed"
else
  need_root "${missing[*]}"
  # Keep the package's init scripts from starting a daemon during install.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod +x "$policy"
    created_policy=1
  fi
  cleanup() { if [ "$created_policy" = 1 ]; then $SUDO rm -f "$policy"; fi; }
  trap cleanup EXIT

  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

stop_system_prometheus

if ! have_prometheus; then
  echo 'ci-system-deps: prometheus/promtool still missing after install' >&2
  exit 1
fi
promtool --version | head -n 1
if ! have_chromium; then
  echo 'ci-system-deps: /usr/bin/chromium still missing after install' >&2
  exit 1
fi
/usr/bin/chromium --version 2>/dev/null | head -n 1 || true
if ! have_faketime; then
  echo 'ci-system-deps: libfaketime still missing after install' >&2
  exit 1
fi
echo "libfaketime: $(dpkg-query -W -f='${Version}' libfaketime)"
