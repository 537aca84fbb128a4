#!/usr/bin/env bash
# Stop the test cluster that setup.sh started: slurmd, slurmctld and (unless --keep-munge) munged.
#
# Stops only the processes named by the pid files the daemons wrote; leaves packages, config,
# key, logs and spool directories in place, so setup.sh brings the cluster back quickly.
set -euo pipefail

keep_munge=0
[[ "${1:-}" == "--keep-munge" ]] && keep_munge=1

# TERM the process in a pid file and wait (bounded) until it is gone.
stop() {
    local name=$1 pidfile=$2 pid
    [[ -s "$pidfile" ]] || return 0
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            printf 'slurm-teardown: %s (pid %s) ignored TERM for 10 s, killing it\n' "$name" "$pid" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$pidfile"
}

stop slurmd /run/slurmd.pid
stop slurmctld /run/slurmctld.pid
((keep_munge)) || stop munged /run/munge/munged.pid
printf 'slurm: cluster tile-ci stopped\n'
