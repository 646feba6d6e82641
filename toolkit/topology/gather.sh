#!/bin/sh
# gpuctl gather: collect the raw outputs `gpuctl detect` reads into one bundle directory.
#
# Usage: gather.sh DEST_DIR
#
# Plain POSIX sh (runs under dash and busybox). Runs as root or not; never fails because a tool
# is absent: each command's exit status, or "missing", goes into DEST_DIR/MANIFEST and the
# parsers decide later what the outputs mean. Only reads: nothing on the node is changed.
# GPUCTL_REPLAY_NOTE, when set (lab nodes that replay captures), is recorded as `replayed:`.
# The file names are read by toolkit/topology/kinds.py (BUNDLE_FILES): keep the two in step.
# A listing tool that ran and listed nothing (ibv_devinfo "No IB devices found" on stderr, an empty
# `rdma link show` with exit 0) is evidence the node has no RDMA device; a missing tool is not.

set -u

if [ "$#" -ne 1 ]; then
    echo "usage: $0 DEST_DIR" >&2
    exit 2
fi
dest=$1
mkdir -p "$dest" || exit 1
manifest="$dest/MANIFEST"
tab=$(printf '\t')

{
    echo "# gpuctl gather manifest"
    echo "format: 1"
    echo "date: $(date -u '+%Y-%m-%dT%H:%M:%SZ' 2>/dev/null || echo unknown)"
    echo "user: $(id -un 2>/dev/null || echo unknown)"
    if [ -n "${GPUCTL_REPLAY_NOTE:-}" ]; then
        # One line: a newline in the note would start a bogus manifest entry.
        echo "replayed: $(printf '%s' "$GPUCTL_REPLAY_NOTE" | tr '\n\t' '  ')"
    fi
} > "$manifest"

# record FILE STATUS COMMAND...: one manifest line per command.
record() {
    file=$1
    status=$2
    shift 2
    echo "$file$tab$status$tab$*" >> "$manifest"
}

# run FILE COMMAND [ARGS...]: stdout to FILE (stderr kept beside it when non-empty).
run() {
    file=$1
    shift
    if ! command -v "$1" >/dev/null 2>&1; then
        record "$file" missing "$@"
        return 0
    fi
    # timeout, where present, keeps a hung driver call from hanging the whole gather.
    if command -v timeout >/dev/null 2>&1; then
        timeout 60 "$@" > "$dest/$file" 2> "$dest/$file.stderr"
    else
        "$@" > "$dest/$file" 2> "$dest/$file.stderr"
    fi
    status=$?
    [ -s "$dest/$file.stderr" ] || rm -f "$dest/$file.stderr"
    record "$file" "$status" "$@"
    return 0
}

# copy FILE SRC: a file the kernel exposes (no command behind it).
copy() {
    if [ -r "$2" ]; then
        cat "$2" > "$dest/$1" 2>/dev/null
        record "$1" "$?" cat "$2"
    else
        record "$1" missing cat "$2"
    fi
}

# The fields gpuctl asks nvidia-smi for (toolkit/topology/nvsmi_query.py QUERY_FIELDS).
query_fields="index,name,uuid,pci.bus_id,memory.total,compute_cap,driver_version"
query_fields="$query_fields,pcie.link.gen.max,pcie.link.width.max,fabric.state,fabric.status"

run nvidia-smi-topo-m.txt nvidia-smi topo -m
run nvidia-smi-query-gpu.csv nvidia-smi "--query-gpu=$query_fields" --format=csv
run nvidia-smi-q.xml nvidia-smi -q -x
run ibv_devinfo-v.txt ibv_devinfo -v
run ibstat.txt ibstat
run show_gids.txt show_gids
run ibdev2netdev.txt ibdev2netdev
run rdma-link.txt rdma link show
run ip-addr.json ip -j addr show
run ip-link.json ip -j -d link show
run hostname.txt hostname
run uname-r.txt uname -r
run lscpu.txt lscpu
run numactl-H.txt numactl -H
copy proc-cmdline.txt /proc/cmdline

# NCCL version: the file the loader's libnccl.so.2 resolves to carries it (ldconfig lists the
# soname link, libnccl.so.2 => /usr/lib/.../libnccl.so.2, whose target is libnccl.so.2.21.5); the
# package manager or header may too.
{
    if command -v ldconfig >/dev/null 2>&1; then
        ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}' | while read -r lib; do
            readlink -f "$lib"
        done
    fi
    if command -v dpkg-query >/dev/null 2>&1; then
        dpkg-query -W -f '${Package} ${Version}\n' libnccl2 2>/dev/null
    fi
    if command -v rpm >/dev/null 2>&1; then
        rpm -q --qf '%{NAME} %{VERSION}\n' libnccl 2>/dev/null | grep -v 'not installed'
    fi
    for header in /usr/include/nccl.h /usr/local/cuda/include/nccl.h; do
        if [ -r "$header" ]; then
            grep -E '#define NCCL_(MAJOR|MINOR|PATCH) ' "$header"
            break
        fi
    done
} > "$dest/nccl-version.txt" 2>/dev/null
if [ -s "$dest/nccl-version.txt" ]; then
    record nccl-version.txt 0 "ldconfig -p / dpkg-query / nccl.h"
else
    record nccl-version.txt missing "ldconfig -p / dpkg-query / nccl.h"
fi

# NUMA nodes from sysfs: what numactl would say, without numactl.
if [ -d /sys/devices/system/node ]; then
    for node in /sys/devices/system/node/node[0-9]*; do
        [ -r "$node/cpulist" ] || continue
        echo "${node##*/} $(cat "$node/cpulist")"
    done > "$dest/numa-nodes.txt" 2>/dev/null
    record numa-nodes.txt 0 "cat /sys/devices/system/node/node*/cpulist"
else
    record numa-nodes.txt missing "cat /sys/devices/system/node/node*/cpulist"
fi

# GID tables from sysfs (what show_gids reads), only the non-zero slots: a port has 128-256
# slots and almost all of them are empty.
ib=/sys/class/infiniband
if [ -d "$ib" ]; then
    copied=0
    for port in "$ib"/*/ports/*; do
        [ -d "$port/gids" ] || continue
        rel=${port#"$ib"/}
        out="$dest/sys-class-infiniband/$rel"
        mkdir -p "$out/gids" "$out/gid_attrs/types" "$out/gid_attrs/ndevs"
        [ -r "$port/link_layer" ] && cat "$port/link_layer" > "$out/link_layer" 2>/dev/null
        for gid in "$port"/gids/*; do
            index=${gid##*/}
            value=$(cat "$gid" 2>/dev/null) || continue
            case "$value" in
                ""|0000:0000:0000:0000:0000:0000:0000:0000) continue ;;
            esac
            echo "$value" > "$out/gids/$index"
            cat "$port/gid_attrs/types/$index" > "$out/gid_attrs/types/$index" 2>/dev/null
            cat "$port/gid_attrs/ndevs/$index" > "$out/gid_attrs/ndevs/$index" 2>/dev/null
            copied=$((copied + 1))
        done
    done
    record sys-class-infiniband 0 "copy non-zero $ib/*/ports/*/gids ($copied)"
else
    record sys-class-infiniband missing "copy $ib/*/ports/*/gids"
fi

exit 0
