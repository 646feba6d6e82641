# gpuctl's fabric peer check: the mtu role runs it after setting the MTU, and gpuctl's verification
# probe (toolkit/configure/converge.py) runs the same text, so both judge a peer the same way.
#
#   sh -c "$(cat peer_ping.sh)" peer_ping SIZE TRIES WAIT TIMEOUT ADDRESS...
#
# Every peer in parallel: a SIZE-byte ping that must not fragment, tried up to TRIES times WAIT
# seconds apart, each try waiting TIMEOUT seconds for its reply (a reply lost under load is not
# drift). When every try fails, a 56-byte ping tells the two failures apart: it fails too, so the
# peer is unreachable; it passes, so the path MTU is too small for SIZE + 28. One line per peer:
#   ping_ok=ADDRESS | ping_mtu=ADDRESS (MTU too small) | ping_down=ADDRESS (unreachable)
size=$1 tries=$2 pause=$3 timeout=$4
shift 4
for peer in "$@"; do
  (
    try=1
    while :; do
      if ping -n -q -M do -s "$size" -c 1 -W "$timeout" -- "$peer" >/dev/null 2>&1; then
        echo "ping_ok=$peer"
        exit 0
      fi
      [ "$try" -ge "$tries" ] && break
      try=$((try + 1))
      sleep "$pause"
    done
    if ping -n -q -c 2 -i 0.2 -W "$timeout" -- "$peer" >/dev/null 2>&1; then
      echo "ping_mtu=$peer"
    else
      echo "ping_down=$peer"
    fi
  ) &
done
wait
