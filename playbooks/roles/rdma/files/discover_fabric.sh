# gpuctl's rdma role, discover.yml: the fabric interfaces of a node whose provider could not
# report them (Tencent HCC: the RDMA bonds are not in the cloud's API).
#
#   sh -c "$(cat discover_fabric.sh)" discover_fabric IB_DIR GLOB IP
#
# For each RDMA device under IB_DIR (/sys/class/infiniband) whose name matches GLOB (mlx5_bond_*),
# in natural order (mlx5_bond_2 before mlx5_bond_10): the netdev of its port 1, read where the
# kernel puts it for RoCE (ports/1/gid_attrs/ndevs/<index>, the netdev each GID belongs to; for a
# bonded mlx5 device that is the bond, while device/net/ names the physical function), preferring
# the netdev of a RoCE v2 GID, else device/net/*; then that netdev's first global IPv4 address
# (IP: the `ip` command, `ip -o -4 addr show dev NETDEV scope global`).
# One line per device:
#   {"rdma_device": "DEVICE", "name": "NETDEV", "ipv4": "CIDR"}   a usable fabric interface (JSON)
#   nonetdev DEVICE                no netdev found for the device
#   noaddress DEVICE NETDEV        the netdev has no IPv4 address
#   badname DEVICE                 the netdev's name could be read as an option or holds odd characters
ib=$1 glob=$2 ip=$3
for dev in $(cd "$ib" 2>/dev/null && ls -d -- $glob 2>/dev/null | sort -V); do
  port=$ib/$dev/ports/1
  netdev=
  for t in "$port"/gid_attrs/types/*; do
    [ "$(cat "$t" 2>/dev/null)" = "RoCE v2" ] || continue
    n=$(cat "$port/gid_attrs/ndevs/${t##*/}" 2>/dev/null) || continue
    [ -n "$n" ] && netdev=$n && break
  done
  if [ -z "$netdev" ]; then
    for n in "$port"/gid_attrs/ndevs/* "$ib/$dev"/device/net/*; do
      case $n in */device/net/*) [ -e "$n" ] && netdev=${n##*/} ;; *) netdev=$(cat "$n" 2>/dev/null) ;; esac
      [ -n "$netdev" ] && break
    done
  fi
  if [ -z "$netdev" ]; then
    echo "nonetdev $dev"
    continue
  fi
  case $dev/$netdev in
    -*|*/-*|*[!A-Za-z0-9_.:/-]*|*/*/*) echo "badname $dev"; continue ;;
  esac
  cidr=$("$ip" -o -4 addr show dev "$netdev" scope global 2>/dev/null | awk '{ print $4; exit }')
  case $cidr in
    *[!0-9./]*) cidr= ;;
  esac
  if [ -z "$cidr" ]; then
    echo "noaddress $dev $netdev"
    continue
  fi
  # Every field was checked above to hold no quote or backslash: the line is valid JSON.
  printf '{"rdma_device": "%s", "name": "%s", "ipv4": "%s"}\n' "$dev" "$netdev" "$cidr"
done
exit 0
