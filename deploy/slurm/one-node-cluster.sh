#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the tests and for trying deploy/slurm/grade.sbatch:
# munged, slurmctld and slurmd with a slurm.conf that names this host, its CPUs and its memory.
# Needs root and Debian's slurm-wlm and munge (apt-get install slurm-wlm munge).
#
#   deploy/slurm/one-node-cluster.sh start [STATE_DIR]   # prints the SLURM_CONF to export
#
# Starting again with the same STATE_DIR while the cluster is up changes nothing (it prints the same
# line); a cluster that is partly down is stopped and started afresh.
#   deploy/slurm/one-node-cluster.sh stop  [STATE_DIR]
#
# Everything (config, spool, logs, munge socket) lives in STATE_DIR (default /tmp/course-slurm), so
# the machine's own /etc/slurm is left alone; the daemons listen on two free TCP ports.
set -euo pipefail
action=${1:?usage: one-node-cluster.sh start|stop [STATE_DIR]}
state=${2:-/tmp/course-slurm}
conf=$state/slurm.conf

stop() {
  for pidfile in "$state"/run/slurmd.pid "$state"/run/slurmctld.pid "$state"/run/munged.pid; do
    if [ -s "$pidfile" ]; then
      kill "$(cat "$pidfile")" 2>/dev/null || true
    fi
  done
  sleep 1
}

# True when munged, slurmctld and slurmd of this state folder all run.
running() {
  for pidfile in "$state"/run/munged.pid "$state"/run/slurmctld.pid "$state"/run/slurmd.pid; do
    [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null || return 1
  done
}

case "$action" in
  stop)
    stop
    ;;
  start)
    [ "$(id -u)" = 0 ] || { echo "one-node-cluster.sh: needs root (slurmd runs jobs as their users)" >&2; exit 1; }
    for tool in munged slurmctld slurmd sbatch; do
      command -v "$tool" > /dev/null || { echo "one-node-cluster.sh: $tool is missing (apt-get install slurm-wlm munge)" >&2; exit 1; }
    done
    # Already up with this state folder (a second call, or CI's cluster reused by the tests): keep it.
    if [ -s "$conf" ] && running && SLURM_CONF=$conf sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
      echo "export SLURM_CONF=$conf"
      exit 0
    fi
    stop
    rm -rf "$state"
    mkdir -p "$state"/spool/ctld "$state"/spool/d "$state"/log "$state"/run "$state"/munge
    chmod 0755 "$state" "$state"/munge
    key=/etc/munge/munge.key
    if [ ! -s "$key" ]; then
      # Debian's package makes one; a bare install may not have it yet.
      mkdir -p /etc/munge
      dd if=/dev/urandom of="$key" bs=1 count=1024 status=none
      chmod 0400 "$key"
    fi
    munged --force --socket="$state/munge/munge.socket" --pid-file="$state/run/munged.pid" \
      --log-file="$state/log/munged.log" --seed-file="$state/munge/munged.seed" --key-file="$key"
    host=$(hostname -s)
    cpus=$(nproc)
    memory=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
    read -r ctld_port d_port < <(python3 -c 'import socket
ports = []
for _ in range(2):
    s = socket.socket(); s.bind(("", 0)); ports.append(s.getsockname()[1]); s.close()
print(*ports)')
    cat > "$conf" <<CONF
ClusterName=course
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.socket
StateSaveLocation=$state/spool/ctld
SlurmdSpoolDir=$state/spool/d
SlurmctldPidFile=$state/run/slurmctld.pid
SlurmdPidFile=$state/run/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
NodeName=$host CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=grading Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    export SLURM_CONF=$conf
    slurmctld -f "$conf"
    slurmd -f "$conf"
    for _ in $(seq 60); do
      if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
        echo "export SLURM_CONF=$conf"
        exit 0
      fi
      sleep 0.5
    done
    echo "one-node-cluster.sh: the node did not come up; see $state/log" >&2
    tail -5 "$state"/log/*.log >&2 || true
    exit 1
    ;;
  *)
    echo "usage: one-node-cluster.sh start|stop [STATE_DIR]" >&2
    exit 2
    ;;
esac
