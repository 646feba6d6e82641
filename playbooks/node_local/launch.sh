#!/bin/sh
# Written by gpuctl: runs a playbook of this node's cluster on the node itself, with a local
# connection (`gpuctl configure --node-local`). The controller ships this directory, starts this
# script as an async job and waits for it; the inventory (this node alone) comes on stdin.
# Usage: launch.sh DIR site|finish converge|full    (runs DIR/site.yml or DIR/finish.yml)
#        launch.sh DIR stop                         (stops a run left going, and nothing else)
# It leaves DIR/result.tar: events.jsonl (one JSON event a line), rc, output (the run's last lines)
# and bundles/ (the topology the site playbook gathered), and exits with ansible-playbook's status.
set -u
umask 077
dir=$1
playbook=$2
mode=${3:-converge}
case $playbook in site | finish | stop) ;; *) echo "launch.sh: no playbook $playbook" >&2; exit 3 ;; esac
run="$dir/run"
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# A run that an interrupted configure left going on this node (from this bundle or an earlier one)
# is stopped first, with its process group (each async job has its own): only a pid that is still
# the launcher of its directory, and never this launcher's own group.
group_of() {  # the process group: field 5 of /proc/PID/stat, the 3rd after "(command) "
  sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f3
}
own_group=$(group_of $$)
stop_run() {  # $1: a gpuctl-local-* directory
  pid=$(cat "$1/run/pid" 2>/dev/null) || return 0
  case $pid in '' | *[!0-9]*) return 0 ;; esac
  [ "$pid" != "$$" ] || return 0
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$1/launch.sh" || return 0
  group=$(group_of "$pid")
  case $group in '' | *[!0-9]* | 0 | 1) return 0 ;; esac
  [ "$group" != "$own_group" ] || return 0
  kill -TERM "-$group" 2>/dev/null  # dash's kill takes no "--"
  sleep 2
}
for each in "$(dirname "$dir")"/gpuctl-local-*; do
  if [ -d "$each" ]; then stop_run "$each"; fi
done
if [ "$playbook" = stop ]; then exit 0; fi
rm -rf "$run" "$dir/result.tar"
mkdir -p "$run/bundles" "$run/tmp" || exit 3
cat > "$run/inventory.yml" || exit 3
echo $$ > "$run/pid"
# The directories earlier runs shipped (another gpuctl, other roles): this run does not need them.
for old in "$(dirname "$dir")"/gpuctl-local-*; do
  if [ "$old" != "$dir" ] && [ -d "$old" ]; then rm -rf "$old"; fi
done
# ansible-core 2.16 runs on Python 3.10 to 3.12 (its controller requirement): the newest found.
py=""
for name in python3.12 python3.11 python3.10 python3; do
  path=$(command -v "$name" 2>/dev/null) || continue
  if "$path" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 12))' 2>/dev/null; then
    py=$path
    break
  fi
done
if [ -z "$py" ]; then
  echo "no Python 3.10 to 3.12 on this node (ansible-core 2.16 needs one to run here): install python3.11, or configure without --node-local" > "$run/output"
  rc=3
else
  extra='{"gpuctl_full": false}'
  if [ "$mode" = full ]; then extra='{"gpuctl_full": true}'; fi
  # A UTF-8 locale: ansible-core refuses to start without one.
  LC_ALL=C.UTF-8 PYTHONPATH="$dir/lib" ANSIBLE_CONFIG="$dir/ansible.cfg" \
    ANSIBLE_ROLES_PATH="$dir/roles" ANSIBLE_CALLBACK_PLUGINS="$dir/callback_plugins" \
    ANSIBLE_CALLBACKS_ENABLED=gpuctl_events ANSIBLE_PYTHON_INTERPRETER="$py" \
    ANSIBLE_LOCAL_TEMP="$run/tmp" ANSIBLE_REMOTE_TMP="$run/tmp" GPUCTL_EVENTS="$run/events.jsonl" \
    "$py" -c 'import sys; from ansible.cli.playbook import main; main(["ansible-playbook", *sys.argv[1:]])' \
    -i "$run/inventory.yml" -e "$extra" "$dir/$playbook.yml" > "$run/log" 2>&1
  rc=$?
  tail -c 4000 "$run/log" > "$run/output"
fi
echo "$rc" > "$run/rc"
touch "$run/events.jsonl"
tar -C "$run" -cf "$dir/result.tar" events.jsonl rc output bundles
rm -f "$run/pid"
exit "$rc"
