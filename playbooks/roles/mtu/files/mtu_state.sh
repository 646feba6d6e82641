# gpuctl's mtu role, first step, in one round trip for every rail:
#
#   sh -c "$(cat mtu_state.sh)" mtu_state SYS MTU MODE NMCLI NETPLAN IFCFG IFUPDOWN NETWORKD IFACE...
#
# For each fabric interface: read its MTU under SYS (/sys/class/net), set it with `ip link` when it
# differs (MODE apply; MODE check only reports), and say who keeps its configuration:
# NetworkManager when it runs the interface (an active connection), else the first of an ifcfg
# file, netplan, ifupdown, systemd-networkd. Then the netplan files and the ifupdown stanzas that
# already define the interface, so the controller (filter_plugins/mtu_persistence.py, which
# documents these lines) only ever merges the MTU into an existing definition. Nothing is
# persisted here: that waits until the peers answered at the new MTU.
sys=$1 mtu=$2 mode=$3 nmcli=$4 netplan=$5 ifcfg=$6 ifupdown=$7 networkd=$8
shift 8
for i in "$@"; do
  if ! have=$(cat "$sys/$i/mtu" 2>/dev/null); then
    echo "missing $i"
    continue
  fi
  if [ "$have" != "$mtu" ]; then
    [ "$mode" = check ] || ip link set dev "$i" mtu "$mtu" || exit 3
    echo "changed $i $have"
  fi
  uuid=
  if command -v "$nmcli" >/dev/null 2>&1; then
    uuid=$("$nmcli" -e no -g GENERAL.CON-UUID device show "$i" 2>/dev/null)
  fi
  if [ -n "$uuid" ]; then
    echo "nm $i $uuid $("$nmcli" -e no -g 802-3-ethernet.mtu connection show uuid "$uuid" 2>/dev/null)"
  elif [ -e "$ifcfg/ifcfg-$i" ]; then
    echo "style $i ifcfg"
  elif [ -d "$netplan" ]; then
    echo "style $i netplan"
  elif [ -e "$ifupdown/interfaces" ]; then
    echo "style $i ifupdown"
    for f in "$ifupdown/interfaces" "$ifupdown"/interfaces.d/*; do
      case ${f##*/} in 60-gpuctl-mtu-*) continue ;; esac
      if [ -f "$f" ] && awk -v i="$i" '$1 == "iface" && $2 == i { found = 1 } END { exit !found }' "$f"; then
        echo "ifupdown $i $f"
        break
      fi
    done
  elif [ -d "$networkd" ]; then
    echo "style $i networkd"
  else
    echo "style $i none"
  fi
done
if [ -d "$netplan" ]; then
  for f in "$netplan"/*.yaml; do
    [ -f "$f" ] || continue
    case ${f##*/} in 60-gpuctl-mtu-*) continue ;; esac
    echo "netplan ${f##*/} $(base64 < "$f" | tr -d '\n')"
  done
fi
exit 0
