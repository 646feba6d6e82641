# gpuctl's install record: what the install roles (nvidia_driver, cuda, nccl, rdma_userspace) left
# on this node, so that a node booted from an image of a configured node can be told to hold it.
#
#   sh -c "$(cat install_state.sh)" install_state INPUTS check|record [FILE]
#
# INPUTS: the digest gpuctl computed of what decides the install (those roles' files, the software
# pins, the GPU stack, the fabric, the instance type). FILE: /etc/gpuctl/install.env by default.
# record: write INPUTS with the node's kernel release, a digest of its installed package set and
# the loaded NVIDIA module's version. check: print `held=1` when the file holds INPUTS and the
# node's kernel, packages and module are those the file records, else `why=<the first difference>`.
set -u
inputs=$1 mode=$2 file=${3:-/etc/gpuctl/install.env}
kernel=$(uname -r)
# The node's own package database: dpkg where its status file exists, else rpm where rpm knows
# itself (an EL node with EPEL's dpkg-query has no dpkg database). A listing that fails or is empty
# proves nothing, so it is never recorded and never matches.
if [ -f /var/lib/dpkg/status ] && command -v dpkg-query >/dev/null 2>&1; then
  listing=$(dpkg-query -W -f '${Package}=${Version} ${db:Status-Status}\n' 2>/dev/null)
elif command -v rpm >/dev/null 2>&1 && rpm -q rpm >/dev/null 2>&1; then
  listing=$(rpm -qa --qf '%{NAME}=%{EPOCHNUM}:%{VERSION}-%{RELEASE}.%{ARCH}\n' 2>/dev/null)
else
  listing=
fi
if [ -z "$listing" ]; then
  if [ "$mode" = record ]; then
    echo "cannot list the installed packages (no dpkg or rpm database answered)" >&2
    exit 1
  fi
  echo "why=cannot list the installed packages (no dpkg or rpm database answered)"
  exit 0
fi
packages=$(printf '%s\n' "$listing" | LC_ALL=C sort | sha256sum)
packages=${packages%% *}
nvidia=$(cat /sys/module/nvidia/version 2>/dev/null || true)
if [ "$mode" = record ]; then
  umask 022
  mkdir -p "$(dirname "$file")" || exit 1
  printf 'version=1\ninputs=%s\nkernel=%s\npackages=%s\nnvidia=%s\n' "$inputs" "$kernel" "$packages" "$nvidia" \
    > "$file.tmp" && mv -f "$file.tmp" "$file" || exit 1
  echo "recorded=1"
  exit 0
fi
if [ ! -f "$file" ]; then
  echo "why=no install record on this node"
  exit 0
fi
get() { sed -n "s/^$1=//p" "$file" | head -n 1; }
if [ "$(get version)" != 1 ]; then
  echo "why=an install record of another version"
elif [ "$(get inputs)" != "$inputs" ]; then
  echo "why=the install inputs changed (roles, software pins, GPU stack, fabric or instance type)"
elif [ "$(get kernel)" != "$kernel" ]; then
  echo "why=kernel $kernel, the record's is $(get kernel)"
elif [ "$(get packages)" != "$packages" ]; then
  echo "why=the installed packages differ from those recorded"
elif [ "$(get nvidia)" != "$nvidia" ]; then
  echo "why=NVIDIA module ${nvidia:-not loaded}, the record's is $(get nvidia)"
else
  echo "held=1"
fi
