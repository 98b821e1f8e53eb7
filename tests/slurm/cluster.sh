#!/usr/bin/env bash
# tests/slurm/cluster.sh -- a throw-away single-node SLURM cluster on loopback, for tests.
#
# Usage (as root):
#   tests/slurm/cluster.sh install          # apt-get update + install the Debian packages (once)
#   tests/slurm/cluster.sh up STATE_DIR     # start munged, mariadbd, slurmdbd, slurmctld, slurmd
#   . STATE_DIR/env.sh                      # SLURM_CONF and PATH for clients (sbatch, snakemake)
#   tests/slurm/cluster.sh down STATE_DIR   # stop every daemon by its PID file, wait for exit
#   tests/slurm/cluster.sh status STATE_DIR # exit 0 if all daemons are alive
#
# Fixed names (tests rely on them):
#   cluster   matcond
#   account   matcond   (root is associated with it; AccountingStorageEnforce=associations,
#                        so give it as `slurm_account=matcond`)
#   partition debug     (the default partition; one node `localhost` with every CPU, ~95 % of
#                        the memory and one fake GPU `gpu:1`)
#
# Everything -- configs, keys, sockets, PID files, logs, spool, database -- lives under
# STATE_DIR; nothing is written to /etc. STATE_DIR/env.sh exports SLURM_CONF, puts
# STATE_DIR/bin first on PATH and sets TEST_SLURM_ACCOUNT, TEST_SLURM_PARTITION and
# TEST_SLURM_STATE_DIR. STATE_DIR/bin holds wrappers of the client commands (srun, sbatch,
# sacct ...) that pin SLURM_CONF: snakemake-executor-plugin-slurm-jobstep deletes every
# SLURM_* variable before its nested `srun`, which would then look for /etc/slurm/slurm.conf
# (the one place Slurm insists on in /etc); with the wrappers it finds ours.
# How the pieces find each other without /etc:
#   * slurmdbd.conf, gres.conf sit beside slurm.conf (Slurm looks there); PlugStackConfig
#     points to an empty plugstack.conf of ours, not /etc/slurm/plugstack.conf.
#   * munge socket: AuthInfo=socket=... (slurm.conf, slurmdbd.conf) and, for connections to
#     slurmdbd, AccountingStoragePass=<socket> (Slurm ignores AuthInfo there).
#   * mariadbd runs with --no-defaults on a socket only; slurmdbd finds it via
#     MYSQL_UNIX_PORT (slurmdbd.conf has no socket option) and logs in as root (unix_socket).
# The Debian packages themselves install /etc/munge/munge.key, /etc/slurm/plugstack.conf*,
# /etc/mysql/* and init scripts; this script reads none of them (own key, own configs).
#
# Constraints:
#   * root only (slurmd must run as root); munged runs as user `munge`, so every directory
#     above STATE_DIR must be searchable by `munge` (o+x: /tmp/x is fine, pytest's 0700
#     /tmp/pytest-of-root is not).
#   * STATE_DIR must be short (<= 60 characters): Unix socket paths are limited to 108 bytes.
#   * TCP ports SLURM_TEST_PORT (default 16817) .. +2 on 127.0.0.1 (slurmctld, slurmd,
#     slurmdbd); one cluster per port base at a time.
#   * SLURM_TEST_TIMEOUT (default 60) bounds each wait, in seconds.
#   * The fake GPU is STATE_DIR/dev/nvidia0, a character device equal to /dev/null; jobs
#     asking for --gpus=1 get CUDA_VISIBLE_DEVICES=0.
# Daemons are never stopped by name: `down` reads each PID file, checks /proc/PID/comm,
# sends SIGTERM (SIGKILL after the timeout) and waits for the process to be gone. It first
# cancels the cluster's jobs so that no slurmstepd or job process is left behind (if
# slurmctld is already gone, running jobs cannot be cancelled and may survive slurmd).
set -euo pipefail
# System binaries only (never another cluster's STATE_DIR/bin wrappers).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

CLUSTER=matcond
ACCOUNT=matcond
PARTITION=debug
PORT_BASE=${SLURM_TEST_PORT:-16817}
TIMEOUT=${SLURM_TEST_TIMEOUT:-60}
PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server)
MARKER=.slurm-test-cluster
# Client commands wrapped in STATE_DIR/bin (see write_configs).
CLIENTS=(sacct sacctmgr salloc sattach sbatch sbcast scancel scontrol sdiag sinfo sprio squeue
	sreport srun sshare sstat strigger)
# Daemon order for start-up; `down` goes in reverse.
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)

T_START=$EPOCHREALTIME
# Seconds since a $EPOCHREALTIME value, to 0.1 s.
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

die() {
	echo "cluster.sh: error: $*" >&2
	exit 1
}
log() { echo "cluster.sh: $*" >&2; }

# Paths, set from STATE_DIR by set_paths.
set_paths() {
	S=$1
	ETC=$S/etc
	RUN=$S/run
	LOGD=$S/log
	MUNGE=$S/munge
	DB=$S/mysql
	SLURM_CONF_FILE=$ETC/slurm.conf
}

pidfile_of() {
	case $1 in
	munged) echo "$MUNGE/munged.pid" ;;
	*) echo "$RUN/$1.pid" ;;
	esac
}

# Whether PID exists and is not a zombie (PID 1 may not reap in a container).
running() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}

# Print the PID in the daemon's PID file if that process is alive and has the right name.
live_pid() {
	local f pid comm
	f=$(pidfile_of "$1")
	[[ -s $f ]] || return 1
	pid=$(tr -dc '0-9' <"$f")
	[[ -n $pid ]] && running "$pid" || return 1
	comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
	[[ $comm == "$1" ]] || return 1
	echo "$pid"
}

# wait_for DESCRIPTION COMMAND...: poll every 0.2 s until COMMAND succeeds or TIMEOUT.
wait_for() {
	local what=$1 deadline=$((SECONDS + TIMEOUT))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || {
			log "timed out after ${TIMEOUT}s waiting for $what"
			return 1
		}
		sleep 0.2
	done
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

show_logs() {
	local f
	for f in "$LOGD"/*.log "$MUNGE"/munged.log; do
		[[ -s $f ]] || continue
		echo "----- tail $f -----" >&2
		tail -n 25 "$f" >&2
	done
}

# Run a client command against this cluster.
sl() { SLURM_CONF=$SLURM_CONF_FILE "$@"; }

cmd_install() {
	[[ $EUID -eq 0 ]] || die "install must run as root"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# Package scripts try to start the services and are refused without systemd: harmless.
	apt-get install -y --no-install-recommends "${PACKAGES[@]}"
}

write_configs() {
	local cpu_line mem real_mem
	# Topology from slurmd -C, with our node name and ~95 % of the memory.
	cpu_line=$(slurmd -C | head -n 1)
	mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$cpu_line")
	real_mem=$((mem * 95 / 100))
	cpu_line=$(sed -e 's/^NodeName=[^ ]*/NodeName=localhost/' \
		-e "s/RealMemory=[0-9]*/RealMemory=$real_mem/" <<<"$cpu_line")

	cat >"$SLURM_CONF_FILE" <<EOF
# Generated by tests/slurm/cluster.sh; single node on loopback.
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT_BASE
SlurmdPort=$((PORT_BASE + 1))
AuthType=auth/munge
AuthInfo=socket=$MUNGE/munge.socket.2
CredType=cred/munge
StateSaveLocation=$S/spool/slurmctld
SlurmdSpoolDir=$S/spool/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGD/slurmctld.log
SlurmdLogFile=$LOGD/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$ETC/plugstack.conf
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=300
KillWait=5
InactiveLimit=0
DefMemPerCPU=512
SlurmdTimeout=300
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$((PORT_BASE + 2))
# For slurmdbd connections the munge socket is taken from here, not from AuthInfo.
AccountingStoragePass=$MUNGE/munge.socket.2
AccountingStorageEnforce=associations
AccountingStorageTRES=gres/gpu
GresTypes=gpu
$cpu_line Gres=gpu:1 State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

	# The fake GPU must be a character device: a regular file drains the node.
	mknod "$S/dev/nvidia0" c 1 3
	echo "NodeName=localhost Name=gpu File=$S/dev/nvidia0" >"$ETC/gres.conf"
	: >"$ETC/plugstack.conf"

	# slurmdbd insists on mode 600, owned by SlurmUser.
	(
		umask 077
		cat >"$ETC/slurmdbd.conf" <<EOF
# Generated by tests/slurm/cluster.sh.
AuthType=auth/munge
AuthInfo=socket=$MUNGE/munge.socket.2
DbdHost=localhost
DbdPort=$((PORT_BASE + 2))
SlurmUser=root
PidFile=$RUN/slurmdbd.pid
LogFile=$LOGD/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
EOF
	)

	# Client wrappers that pin SLURM_CONF: the slurm-jobstep plugin strips every SLURM_*
	# variable (SLURM_CONF included) before its nested srun, which then looks for
	# /etc/slurm/slurm.conf. With STATE_DIR/bin first on PATH, /etc stays untouched.
	mkdir -p "$S/bin"
	local c real
	for c in "${CLIENTS[@]}"; do
		real=$(command -v "$c") || continue
		printf '#!/bin/sh\nSLURM_CONF=%s exec %s "$@"\n' "$SLURM_CONF_FILE" "$real" >"$S/bin/$c"
		chmod 0755 "$S/bin/$c"
	done

	cat >"$S/env.sh" <<EOF
# Source this to talk to the test cluster in $S.
export SLURM_CONF=$SLURM_CONF_FILE
export PATH=$S/bin:\$PATH
export TEST_SLURM_ACCOUNT=$ACCOUNT
export TEST_SLURM_PARTITION=$PARTITION
export TEST_SLURM_STATE_DIR=$S
EOF
}

start_munged() {
	install -d -o munge -g munge -m 0755 "$MUNGE"
	mungekey --create --keyfile="$MUNGE/munge.key" --force 2>>"$LOGD/setup.log"
	chown munge:munge "$MUNGE/munge.key"
	chmod 0400 "$MUNGE/munge.key"
	setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged \
		--key-file="$MUNGE/munge.key" --socket="$MUNGE/munge.socket.2" \
		--pid-file="$MUNGE/munged.pid" --log-file="$MUNGE/munged.log" \
		--seed-file="$MUNGE/munged.seed" </dev/null >>"$LOGD/setup.log" 2>&1
	wait_for "munged" bash -c "munge -n -S '$MUNGE/munge.socket.2' | unmunge -S '$MUNGE/munge.socket.2'"
}

start_mariadbd() {
	mkdir -p "$DB"
	mariadb-install-db --no-defaults --datadir="$DB/data" --user=root \
		--auth-root-authentication-method=socket --skip-test-db >>"$LOGD/setup.log" 2>&1
	# Durability is irrelevant here; keep it small and fast. Socket only, no TCP.
	setsid mariadbd --no-defaults --datadir="$DB/data" --socket="$DB/mysqld.sock" \
		--pid-file="$RUN/mariadbd.pid" --log-error="$LOGD/mariadbd.log" --user=root \
		--skip-networking --skip-log-bin --innodb-buffer-pool-size=64M \
		--innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --innodb-fast-shutdown=2 \
		</dev/null >>"$LOGD/setup.log" 2>&1 &
	wait_for "mariadbd" mariadb --no-defaults -S "$DB/mysqld.sock" -e 'select 1'
	wait_for "mariadbd PID file" live_pid mariadbd
}

start_slurmdbd() {
	SLURM_CONF=$SLURM_CONF_FILE MYSQL_UNIX_PORT=$DB/mysqld.sock slurmdbd \
		</dev/null >>"$LOGD/setup.log" 2>&1
	wait_for "slurmdbd" sl sacctmgr -n list cluster
	{
		sl sacctmgr -i add cluster "$CLUSTER"
		sl sacctmgr -i add account "$ACCOUNT" Description=tests Organization=tests
		sl sacctmgr -i add user root Account="$ACCOUNT"
	} >>"$LOGD/setup.log"
}

start_slurm() {
	SLURM_CONF=$SLURM_CONF_FILE slurmctld -c -f "$SLURM_CONF_FILE" </dev/null >>"$LOGD/setup.log" 2>&1
	wait_for "slurmctld" sl scontrol ping
	SLURM_CONF=$SLURM_CONF_FILE slurmd -N localhost -f "$SLURM_CONF_FILE" \
		</dev/null >>"$LOGD/setup.log" 2>&1
	wait_for "node localhost idle" node_idle
	wait_for "sacct" sl sacct -n -X -a
}

node_idle() { [[ $(sl sinfo -h -n localhost -o %t) == idle ]]; }

cmd_up() {
	[[ $EUID -eq 0 ]] || die "up must run as root"
	local d
	for d in munged mariadbd slurmdbd slurmctld slurmd sbatch; do
		command -v "$d" >/dev/null || die "$d not found: run '$0 install'"
	done
	d=$(realpath -m "$1")
	set_paths "$d"
	((${#S} <= 60)) || die "STATE_DIR $S is longer than 60 characters (socket paths)"
	mkdir -p "$S"
	for d in "${DAEMONS[@]}"; do
		if pid=$(live_pid "$d"); then
			die "$d (pid $pid) of a cluster in $S is already running; run '$0 down $S' first"
		fi
	done
	if [[ -n $(ls -A "$S") ]]; then
		[[ -e $S/$MARKER ]] || die "$S is not empty and was not made by this script"
		# Left over from an earlier cluster that is no longer running: start afresh.
		rm -rf "${S:?}"/{bin,etc,run,log,munge,mysql,spool,dev,env.sh}
	fi
	chmod 0755 "$S"
	setpriv --reuid=munge --regid=munge --init-groups test -x "$S" ||
		die "user munge cannot reach $S: every parent directory needs o+x"
	for d in 0 1 2; do
		! port_busy $((PORT_BASE + d)) ||
			die "port $((PORT_BASE + d)) is in use (another test cluster? set SLURM_TEST_PORT)"
	done

	touch "$S/$MARKER"
	mkdir -p "$ETC" "$RUN" "$LOGD" "$S/spool/slurmctld" "$S/spool/slurmd" "$S/dev"
	# From here on, a failure shows the logs and stops whatever was started.
	STEP=init
	trap 'rc=$?; if ((rc)); then log "up failed at step $STEP (exit $rc); logs:"; show_logs
		log "stopping what was started"; stop_all || true; fi' EXIT
	local t0 times=""
	for STEP in write_configs start_munged start_mariadbd start_slurmdbd start_slurm; do
		t0=$EPOCHREALTIME
		"$STEP"
		times+=" $STEP=$(elapsed "$t0")s"
	done
	trap - EXIT
	log "cluster up in $(elapsed "$T_START")s ($times ); source $S/env.sh"
}

# stop_daemons NAME...: SIGTERM by PID file, SIGKILL after TIMEOUT, wait until all are gone.
stop_daemons() {
	local d pid pids=() deadline=$((SECONDS + TIMEOUT)) killed=0
	for d in "$@"; do
		pid=$(live_pid "$d") || continue
		kill -TERM "$pid" 2>/dev/null || true
		pids+=("$pid")
	done
	for pid in "${pids[@]}"; do
		while running "$pid"; do
			if ((SECONDS >= deadline && !killed)); then
				log "pid $pid ignored SIGTERM for ${TIMEOUT}s; sending SIGKILL"
				kill -KILL "${pids[@]}" 2>/dev/null || true
				killed=1
			fi
			sleep 0.1
		done
	done
}

stop_all() {
	# Cancel jobs first so that no slurmstepd or job process outlives slurmd.
	if live_pid slurmctld >/dev/null; then
		local jobs
		jobs=$(sl squeue -h -o %A 2>/dev/null || true)
		if [[ -n $jobs ]]; then
			# shellcheck disable=SC2086 # word splitting of job ids is intended
			sl scancel --quiet $jobs >/dev/null 2>&1 || true
			wait_for "jobs to end" jobs_gone || true
		fi
	fi
	# Slurm first (slurmctld reports to slurmdbd as it stops), then the rest; each stage in
	# parallel, since every daemon takes 1-2 s to exit.
	stop_daemons slurmd slurmctld
	stop_daemons slurmdbd mariadbd munged
}

jobs_gone() { [[ -z $(sl squeue -h -o %A) ]]; }

cmd_down() {
	[[ -d $1 ]] || die "no such STATE_DIR: $1"
	set_paths "$(realpath "$1")"
	[[ -e $S/$MARKER ]] || die "$S was not made by this script"
	stop_all
	log "cluster in $S down in $(elapsed "$T_START")s"
}

cmd_status() {
	set_paths "$(realpath "$1")"
	local d rc=0 pid
	for d in "${DAEMONS[@]}"; do
		if pid=$(live_pid "$d"); then echo "$d $pid"; else
			echo "$d not running"
			rc=1
		fi
	done
	return $rc
}

case ${1:-} in
install) cmd_install ;;
up | down | status)
	[[ $# -eq 2 ]] || die "usage: $0 $1 STATE_DIR"
	"cmd_$1" "$2"
	;;
*) die "usage: $0 install | up STATE_DIR | down STATE_DIR | status STATE_DIR" ;;
esac
