#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for `cltrap slurm`'s end-to-end test
# (tests/tests/slurm.rs) and for trying `cltrap slurm … --submit` without a real cluster.
#
# Usage: scripts/slurm-setup.sh start|stop|status [STATE_DIR]
#
# Everything the cluster writes lives in STATE_DIR (default $CLTRAP_SLURM_DIR, else
# ${TMPDIR:-/tmp}/cltrap-slurm): slurm.conf, the munge key and socket, slurmctld's state, slurmd's
# spool, pid files and logs. Nothing under /etc or /run is read or changed, and no systemd is
# needed: the daemons are started directly. Slurm's clients find this cluster through
# SLURM_CONF=STATE_DIR/slurm.conf (`start` prints that line last).
#
# start   installs Debian's slurm-wlm and munge when they are missing (apt-get, as root or with
#         sudo; scripts/install-deps.sh installs them too), writes slurm.conf for this host (its
#         name and CPUs from `slurmd -C`; proctrack/linuxproc, task/none, select/cons_tres, no
#         cgroups, no accounting), generates a munge key if STATE_DIR has none, starts munged,
#         slurmctld and slurmd, and waits until `sinfo` shows the node idle.
# stop    cancels the cluster's jobs and stops the three daemons (by their pid files).
# status  says which daemons run and what `sinfo` shows; exit 0 when the node takes jobs.
#
# Ports: CLTRAP_SLURM_PORT (default 6817) for slurmctld, the next one for slurmd.
#
# Exit status: 0 done; 77 the cluster cannot run in this environment (the packages cannot be
# installed, or a daemon exits at start): the last stderr line is `cannot start: REASON`;
# 1 anything else.
set -uo pipefail

ACTION="${1:-}"
STATE="${2:-${CLTRAP_SLURM_DIR:-${TMPDIR:-/tmp}/cltrap-slurm}}"
PORT="${CLTRAP_SLURM_PORT:-6817}"
CONF="$STATE/slurm.conf"
MUNGE_DIR="$STATE/munge"
SOCKET="$MUNGE_DIR/munge.socket"
# How long the daemons get to come up (seconds); generous, it is not a measurement.
WAIT_S="${CLTRAP_SLURM_WAIT:-120}"

say() { printf '==> %s\n' "$*" >&2; }
fail() { printf 'cltrap slurm-setup: %s\n' "$*" >&2; exit 1; }
cannot() { printf 'cannot start: %s\n' "$*" >&2; exit 77; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        return 1
    fi
}

# The programs of slurm-wlm and munge this script runs.
PROGRAMS=(munged mungekey slurmctld slurmd sinfo squeue scancel sbatch)

missing_programs() {
    local p
    for p in "${PROGRAMS[@]}"; do
        command -v "$p" >/dev/null 2>&1 || printf '%s\n' "$p"
    done
}

install() {
    local missing
    missing="$(missing_programs | tr '\n' ' ')"
    [ -z "$missing" ] && return 0
    say "installing slurm-wlm and munge (missing: $missing)"
    command -v apt-get >/dev/null 2>&1 \
        || cannot "Slurm is not installed ($missing missing) and there is no apt-get to install slurm-wlm and munge"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 \
        && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            slurm-wlm munge >&2 \
        || cannot "apt-get could not install slurm-wlm and munge (root or sudo and a package mirror are needed)"
    missing="$(missing_programs | tr '\n' ' ')"
    [ -z "$missing" ] || cannot "slurm-wlm and munge are installed but $missing is still missing"
}

# Whether the daemon of pid file $1 (named like it: munged.pid, slurmd.pid) is alive: the
# process is there and is that program (a stale pid file may name an unrelated process).
alive() {
    local pid
    [ -r "$1" ] || return 1
    pid="$(cat "$1" 2>/dev/null)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$(basename "$1" .pid)" ]
}

# Whether the daemon of pid file $1 has died, $2 seconds after it was started: its pid file
# names a dead process, or it has written none in 15 s (a daemon writes it once it has forked).
gone() {
    if [ -s "$1" ]; then
        ! alive "$1"
    else
        [ "$2" -ge 15 ]
    fi
}

# The last lines of a log, on one line, for a reason.
log_tail() {
    [ -r "$1" ] && tail -n 3 "$1" | tr '\n' ' ' | sed 's/  */ /g'
}

write_conf() {
    local node user
    # `slurmd -C` prints this host's NodeName, CPUs, sockets, cores and memory as slurm.conf wants.
    node="$(slurmd -C 2>/dev/null | grep '^NodeName=' | head -n 1)"
    [ -n "$node" ] || cannot "slurmd -C does not describe this host: $(slurmd -C 2>&1 | head -n 1)"
    HOST="$(sed 's/^NodeName=\([^ ]*\).*/\1/' <<<"$node")"
    user="$(id -un)"
    cat >"$CONF" <<EOF
# A single-node cluster written by scripts/slurm-setup.sh; state in $STATE.
ClusterName=cltrap
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
StateSaveLocation=$STATE/state
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
PlugStackConfig=$STATE/plugstack.conf
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=3600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=cltrap Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    : >"$STATE/plugstack.conf"
}

start_munge() {
    alive "$MUNGE_DIR/munged.pid" && return 0
    rm -f "$MUNGE_DIR/munged.pid"
    mkdir -p "$MUNGE_DIR" || fail "cannot create $MUNGE_DIR"
    # munged wants its socket's folder searchable by all, and its key private.
    chmod 755 "$MUNGE_DIR"
    if [ ! -s "$MUNGE_DIR/munge.key" ]; then
        mungekey --create --keyfile="$MUNGE_DIR/munge.key" >&2 \
            || fail "mungekey could not create $MUNGE_DIR/munge.key"
    fi
    chmod 600 "$MUNGE_DIR/munge.key"
    rm -f "$SOCKET"
    munged --force --key-file="$MUNGE_DIR/munge.key" --socket="$SOCKET" \
        --pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" \
        --seed-file="$MUNGE_DIR/munged.seed" \
        || cannot "munged does not start: $(log_tail "$MUNGE_DIR/munged.log")"
}

start() {
    install
    mkdir -p "$STATE/state" "$STATE/spool" || fail "cannot create $STATE"
    chmod 700 "$STATE"
    write_conf
    export SLURM_CONF="$CONF"
    start_munge
    if ! alive "$STATE/slurmctld.pid"; then
        rm -f "$STATE/slurmctld.pid"
        # -c: a fresh controller (no jobs of an earlier run).
        slurmctld -c || cannot "slurmctld does not start: $(log_tail "$STATE/slurmctld.log")"
    fi
    if ! alive "$STATE/slurmd.pid"; then
        rm -f "$STATE/slurmd.pid"
        slurmd || cannot "slurmd does not start: $(log_tail "$STATE/slurmd.log")"
    fi
    local waited=0 state=""
    while [ "$waited" -lt "$WAIT_S" ]; do
        gone "$STATE/slurmctld.pid" "$waited" && cannot "slurmctld exited: $(log_tail "$STATE/slurmctld.log")"
        gone "$STATE/slurmd.pid" "$waited" && cannot "slurmd exited: $(log_tail "$STATE/slurmd.log")"
        state="$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1)"
        case "$state" in
            idle | mixed | allocated)
                say "Slurm: node $HOST is $state (state and logs in $STATE)"
                printf 'SLURM_CONF=%s\n' "$CONF"
                return 0
                ;;
        esac
        sleep 1
        waited=$((waited + 1))
    done
    fail "the node is not idle after ${WAIT_S} s (sinfo says: ${state:-nothing}); see $STATE/slurmctld.log and $STATE/slurmd.log"
}

# Stops the process of pid file $1: TERM, then KILL after 10 s.
stop_pid() {
    local pid i
    alive "$1" || return 0
    pid="$(cat "$1")"
    kill "$pid" 2>/dev/null
    for i in $(seq 1 20); do
        alive "$1" || return 0
        sleep 0.5
    done
    alive "$1" && kill -9 "$pid" 2>/dev/null
    return 0
}

stop() {
    [ -r "$CONF" ] || { say "no cluster in $STATE"; return 0; }
    export SLURM_CONF="$CONF"
    if alive "$STATE/slurmctld.pid"; then
        scancel --quiet --user="$(id -un)" 2>/dev/null
        local i
        for i in $(seq 1 20); do
            [ -z "$(squeue -h 2>/dev/null)" ] && break
            sleep 0.5
        done
    fi
    stop_pid "$STATE/slurmd.pid"
    stop_pid "$STATE/slurmctld.pid"
    stop_pid "$MUNGE_DIR/munged.pid"
    say "Slurm stopped (state and logs kept in $STATE)"
}

status() {
    local ok=0 p
    for p in "$MUNGE_DIR/munged.pid" "$STATE/slurmctld.pid" "$STATE/slurmd.pid"; do
        if alive "$p"; then
            echo "$(basename "$p" .pid): running (pid $(cat "$p"))"
        else
            echo "$(basename "$p" .pid): not running"
            ok=1
        fi
    done
    if [ "$ok" -eq 0 ]; then
        SLURM_CONF="$CONF" sinfo -N 2>&1
        case "$(SLURM_CONF="$CONF" sinfo -h -N -o '%T' 2>/dev/null | head -n 1)" in
            idle | mixed | allocated) ;;
            *) ok=1 ;;
        esac
    fi
    return "$ok"
}

case "$ACTION" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *)
        echo "usage: $0 start|stop|status [STATE_DIR]" >&2
        exit 1
        ;;
esac
