# gpuctl's lifecycle role on a lab node, which has no systemd: keep one agent process running.
#
#   sh -c "$(cat lab_service.sh)" lab_service MODE PIDFILE LOG PYTHON AGENT CONFIG
#
# MODE start: start the agent unless the pidfile names a live one; restart: stop it first (its
# file or configuration changed); stop: stop it and forget it. Prints started / running / stopped.
mode=$1 pidfile=$2 logfile=$3 python=$4 agent=$5 config=$6
pid=$(cat "$pidfile" 2>/dev/null)
alive=
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -qs lifecycle-agent "/proc/$pid/cmdline"; then
  alive=1
fi
if [ -n "$alive" ] && [ "$mode" != start ]; then
  kill "$pid"
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  alive=
  [ "$mode" = stop ] && echo stopped
fi
if [ "$mode" = stop ]; then
  rm -f -- "$pidfile"
  exit 0
fi
if [ -n "$alive" ]; then
  echo running
  exit 0
fi
setsid "$python" "$agent" "$config" >>"$logfile" 2>&1 </dev/null &
echo $! >"$pidfile"
echo started
