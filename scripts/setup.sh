#!/usr/bin/env bash
# Idempotent machine + venv set-up for gs-cgen (called by `make test`,
# `make demo` and .ci/run). Needs root for apt, the headers link and tracefs.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
dpkg -s python3-bpfcc >/dev/null 2>&1 || need_apt+=(python3-bpfcc)
dpkg -s linux-headers-amd64 >/dev/null 2>&1 || need_apt+=(linux-headers-amd64)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)      # the C++ fixtures
command -v gdb >/dev/null 2>&1 || need_apt+=(gdb)
# clang's DWARF 5 (DW_FORM_loclistx, DW_OP_addrx, DW_FORM_rnglistx): the
# clang fixtures of tests/unit/dwarf and tests/live; libc++ for the C++
# std fixture built with -stdlib=libc++ (tests/live/test_cpp_std_live.py)
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
dpkg -s libc++-dev >/dev/null 2>&1 || need_apt+=(libc++-dev libc++abi-dev)
# glibc's DWARF: tests/live/test_glibc_live.py traces malloc, strlen, ... by name
dpkg -s libc6-dbg >/dev/null 2>&1 || need_apt+=(libc6-dbg)
command -v make >/dev/null 2>&1 || need_apt+=(make)
# man(1) for tests/install/test_wheel.py: the installed page renders and is found
command -v man >/dev/null 2>&1 || need_apt+=(man-db)
# debug files from a debuginfod server (tests/live/test_debuginfod_live.py):
# the client library gs-cgen loads through ctypes, and the server the test runs
dpkg -s libdebuginfod1 >/dev/null 2>&1 || need_apt+=(libdebuginfod1)
command -v debuginfod >/dev/null 2>&1 || need_apt+=(debuginfod)
# the oracle for the BTF reader (tests/unit/runtime/test_btf.py); bpftool is in /usr/sbin
[ -x /usr/sbin/bpftool ] || command -v bpftool >/dev/null 2>&1 || need_apt+=(bpftool)
python3_venv_ok() { /usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1; }
python3_venv_ok || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing ${need_apt[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
bash scripts/setup-containers.sh        # podman + runc for tests/live/test_containers_live.py

# BCC compiles against /lib/modules/$(uname -r)/build; link Debian's
# generic headers there when the running kernel ships none.
moddir="/lib/modules/$(uname -r)"
if [ ! -e "$moddir/build/include" ]; then
    arch_tree=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)
    common_tree=$(ls -d /usr/src/linux-headers-*-common 2>/dev/null | sort -V | tail -1)
    if [ -z "$arch_tree" ] || [ -z "$common_tree" ]; then
        echo "setup: no kernel headers found under /usr/src" >&2
        exit 1
    fi
    mkdir -p "$moddir"
    ln -sfn "$arch_tree" "$moddir/build"
    ln -sfn "$common_tree" "$moddir/source"
fi

# tracefs lets us inspect (and, for the legacy path, remove) uprobes.
if ! mountpoint -q /sys/kernel/tracing; then
    mount -t tracefs nodev /sys/kernel/tracing
fi

# The venv sees Debian's python3-bpfcc through system site packages (BCC
# only: every PyPI dependency is installed into the venv, at the versions of
# the constraints file, whatever the machine happens to have).
venv="${GS_CGEN_VENV:-.venv}"
constraints="${GS_CGEN_CONSTRAINTS:-constraints.txt}"
stamp="$venv/.gs-cgen-installed"
want="$(sha256sum pyproject.toml "$constraints" | sha256sum | cut -c1-16)"
# A new dependency set gets a new venv: installing over an old one leaves
# the old releases' metadata behind (pip reports them, --version too).
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$venv"/bin/python -c 'import bcc' >/dev/null 2>&1 || \
        ! "$venv"/bin/python -c 'import gs_cgen.cli, lark, elftools, click, rich, pycparser, capstone, prometheus_client, pytest' >/dev/null 2>&1; then
    rm -rf "$venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    # --ignore-installed: a system-site copy of a dependency must not stand
    # in for the pinned one. editable_mode=compat puts the checkout on
    # sys.path with a plain .pth line; setuptools' default editable finder is
    # an import hook that costs every gs-cgen run ~20 ms of start-up
    # (pathlib, urllib, importlib.util) before gs-cgen's first line. Should a
    # setuptools release drop compat mode, the default one is used.
    install() {
        "$venv"/bin/pip install -q --disable-pip-version-check --no-cache-dir --ignore-installed \
            -c "$constraints" "$@" -e '.[test]' 2> >(grep -v "^WARNING: Location .* is ignored" >&2)
    }
    install --config-settings editable_mode=compat || install
    echo "$want" > "$stamp"
fi
# An editable install compiles none of gs_cgen, and with
# PYTHONDONTWRITEBYTECODE set nothing ever writes its .pyc files: every run
# would compile ~50 modules again (~0.1 s). Stale ones are just ignored.
"$venv"/bin/python -m compileall -q -j 0 gs_cgen >/dev/null || true
echo "setup: ok ($constraints)" >&2
