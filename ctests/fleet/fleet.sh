#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fleet.sh EFAP2P SCENARIO: efap2p check inside the real fleet engines, on
# emulated hosts (efap2p sim), as docs/operators.md sets them up. Root, on
# loopback only; every daemon is this script's own and stops with it.
#   slurm       slurmctld + slurmd + munged; HealthCheckProgram runs the
#               packaged wrapper (dist/efap2p-slurm-healthcheck) inside an
#               emulated host: healthy p5.48xlarge stays IDLE, a
#               firmware-blocked NIC (topology file) DRAINs the node with
#               the check's reason, fixed it RESUMEs, a CPU node stays IDLE
#   prometheus  node_exporter's textfile collector reads the check's file,
#               prometheus scrapes it, a PromQL query returns the status
#   nfd         the feature file in features.d/ carries NFD's labels
# EFAP2P_FLEET_WRONG=MODEL makes the check's status wrong on purpose: every
# run checks MODEL instead (p5.48xlarge: always healthy; trn2.48xlarge:
# always degraded, libefa 44 claims none of its NICs): each scenario must
# then fail.
set -uo pipefail
efap2p=$(realpath "$1") scenario=$2
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fail() { echo "FAIL: $*"; [ -n "${logs:-}" ] && tail -n 20 $logs 2>/dev/null; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "the engines run as root here"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efap2p-fleet.XXXXXX")
chmod 755 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# The check as the scenarios run it: inside an emulated host of model $1,
# with the remaining arguments. EFAP2P_FLEET_WRONG replaces the answer with
# a healthy one whatever the machine, to prove the scenarios can fail.
cat >"$tmp/check" <<SH
#!/bin/sh
if [ -n "\${EFAP2P_FLEET_WRONG:-}" ]; then m=\$EFAP2P_FLEET_WRONG; unset EFAP2P_TOPOLOGY; else m=\$1; fi
shift
exec "$efap2p" sim --machine "\$m" -- "\$@"
SH
chmod 755 "$tmp/check"

# until SECONDS CMD...: retries CMD every 0.2 s for SECONDS.
until_ok() {
	local end=$((SECONDS + $1))
	shift
	while ! "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

case $scenario in
slurm)
	for c in slurmctld slurmd munged scontrol sinfo; do command -v $c >/dev/null || skip "$c missing (Debian packages slurm-wlm, munge)"; done
	node=$(hostname -s)
	export SLURM_CONF=$tmp/slurm.conf
	# munge: its own key and socket, as the munge user
	dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 status=none
	mkdir "$tmp/munge" && chown munge:munge "$tmp/munge" "$tmp/munge.key" && chmod 755 "$tmp/munge" && chmod 400 "$tmp/munge.key"
	runuser -u munge -- munged --foreground --socket="$tmp/munge/socket" --key-file="$tmp/munge.key" \
		--pid-file="$tmp/munge/pid" --log-file="$tmp/munge/log" --seed-file="$tmp/munge/seed" &
	pids+=($!)
	until_ok 10 test -S "$tmp/munge/socket" || fail "munged did not start"
	ctld=$(free_port) slurmd_port=$(free_port)
	# HealthCheckProgram: the packaged wrapper, run inside the emulated host
	# the scenario file names (the model, and a topology file or none)
	sed -e "s|@bindir@|$(dirname "$efap2p")|g" -e "s|@datadir@|$src/dist|g" "$src/dist/efap2p-slurm-healthcheck.in" >"$tmp/slurm-healthcheck"
	chmod 755 "$tmp/slurm-healthcheck"
	cat >"$tmp/hc" <<-SH
	#!/bin/sh
	export SLURM_CONF=$SLURM_CONF PATH=/usr/sbin:/usr/bin:/sbin:/bin EFAP2P_SLURM_NODE=$node EFAP2P_FLEET_WRONG=${EFAP2P_FLEET_WRONG:-}
	. $tmp/scenario
	exec $tmp/check "\$MODEL" $tmp/slurm-healthcheck
	SH
	chmod 755 "$tmp/hc"
	echo "MODEL=p5.48xlarge" >"$tmp/scenario"
	mkdir "$tmp/state" "$tmp/spool"
	cat >"$SLURM_CONF" <<-CONF
	ClusterName=efap2pfleet
	SlurmctldHost=$node(127.0.0.1)
	SlurmctldPort=$ctld
	SlurmdPort=$slurmd_port
	AuthType=auth/munge
	AuthInfo=socket=$tmp/munge/socket
	CredType=cred/munge
	SlurmUser=root
	SlurmdUser=root
	StateSaveLocation=$tmp/state
	SlurmdSpoolDir=$tmp/spool
	SlurmctldPidFile=$tmp/slurmctld.pid
	SlurmdPidFile=$tmp/slurmd.pid
	SlurmctldLogFile=$tmp/slurmctld.log
	SlurmdLogFile=$tmp/slurmd.log
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	SelectType=select/linear
	MpiDefault=none
	ReturnToService=2
	HealthCheckProgram=$tmp/hc
	HealthCheckInterval=1
	HealthCheckNodeState=ANY
	NodeName=$node NodeAddr=127.0.0.1 CPUs=1 RealMemory=1 State=UNKNOWN
	PartitionName=fleet Nodes=$node Default=YES State=UP
	CONF
	logs="$tmp/slurmctld.log $tmp/slurmd.log"
	slurmctld -D -i -f "$SLURM_CONF" >"$tmp/slurmctld.out" 2>&1 &
	pids+=($!)
	until_ok 30 scontrol ping >/dev/null 2>&1 || fail "slurmctld did not answer"
	slurmd -D -N "$node" -f "$SLURM_CONF" >"$tmp/slurmd.out" 2>&1 &
	pids+=($!)
	state() { sinfo -h -n "$node" -o '%T' 2>/dev/null; }
	reason() { sinfo -h -n "$node" -o '%E' 2>/dev/null; }
	# is STATE: the node's state is STATE, seen after at least 3 health
	# checks of the current scenario (the interval is 1 s).
	is() { [ "$(state)" = "$1" ]; }
	settle() { sleep 4; }
	until_ok 60 is idle || fail "a healthy p5.48xlarge is $(state), not idle: $(reason)"
	settle
	is idle || fail "healthy p5.48xlarge: $(state) ($(reason)), want idle"
	echo "slurm: healthy p5.48xlarge stays idle"

	# a NIC whose firmware blocks peers, recorded in the operator's file
	"$tmp/check" p5.48xlarge "$efap2p" export --peer-blocked 0000:93:00.0 -o "$tmp/topology.json" >/dev/null 2>&1 ||
		fail "export --peer-blocked"
	printf 'MODEL=p5.48xlarge\nexport EFAP2P_TOPOLOGY=%s\n' "$tmp/topology.json" >"$tmp/scenario"
	until_ok 30 is drained || fail "firmware-blocked NIC: $(state) ($(reason)), want drained"
	r=$(reason)
	[[ $r == "efap2p: PROBLEM p2p-refused: GPU4 0000:97:00.0: P2P DMA refused with 1 of its 4 switch-local EFA NICs: rdmap147s0 (0000:93:00.0)"* ]] ||
		fail "drain reason: $r"
	scontrol show node "$node" | grep -q "Reason=efap2p: PROBLEM p2p-refused" || fail "scontrol show node: no reason: $(scontrol show node "$node")"
	sinfo -R | grep -q "efap2p: PROBLEM" || fail "sinfo -R: $(sinfo -R)" # it cuts the reason at 20 characters
	echo "slurm: firmware-blocked NIC drains the node: $r"

	# fixed (the record removed): the next health check resumes it
	echo "MODEL=p5.48xlarge" >"$tmp/scenario"
	until_ok 30 is idle || fail "fixed: $(state) ($(reason)), want idle"
	echo "slurm: fixed, the node is resumed"

	# a CPU node: not applicable, stays idle
	echo "MODEL=cpu-node" >"$tmp/scenario"
	settle
	is idle || fail "cpu-node: $(state) ($(reason)), want idle"
	echo "slurm: a CPU node stays idle"
	;;
prometheus)
	for c in prometheus prometheus-node-exporter curl; do command -v $c >/dev/null || skip "$c missing (Debian packages prometheus, prometheus-node-exporter, curl)"; done
	mkdir "$tmp/textfile" "$tmp/tsdb"
	ne=$(free_port) pp=$(free_port)
	prometheus-node-exporter --web.listen-address="127.0.0.1:$ne" --collector.disable-defaults \
		--collector.textfile --collector.textfile.directory="$tmp/textfile" --no-collector.systemd >"$tmp/ne.log" 2>&1 &
	pids+=($!)
	cat >"$tmp/prometheus.yml" <<-YML
	global: {scrape_interval: 1s, evaluation_interval: 1s}
	rule_files: ["$src/dist/efap2p.rules.yml"]
	scrape_configs:
	  - job_name: node
	    static_configs: [{targets: ["127.0.0.1:$ne"]}]
	YML
	prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
		--web.listen-address="127.0.0.1:$pp" >"$tmp/prom.log" 2>&1 &
	pids+=($!)
	logs="$tmp/ne.log $tmp/prom.log"
	until_ok 30 curl -sf "http://127.0.0.1:$pp/-/ready" -o /dev/null || fail "prometheus not ready"
	# query EXPR: the value of the instant vector's single sample, or "".
	query() {
		curl -sf "http://127.0.0.1:$pp/api/v1/query" --data-urlencode "query=$1" |
			python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if len(r)==1 else "")'
	}
	# scrape MODEL WANT [ENV]: the check writes the textfile inside the
	# emulated host; the status PromQL reads must be WANT.
	scrape() {
		local model=$1 want=$2
		sleep 1.1 # a new second: the run's timestamp tells it from the last
		env ${3:-} "$tmp/check" "$model" "$efap2p" check --format prometheus -o "$tmp/textfile/efap2p.prom" >/dev/null 2>&1
		local stamp
		stamp=$(sed -n 's/^efap2p_check_timestamp_seconds //p' "$tmp/textfile/efap2p.prom")
		fresh() { awk -v a="$(query efap2p_check_timestamp_seconds)" -v b="$stamp" 'BEGIN { exit !(a != "" && a + 0 == b + 0) }'; }
		until_ok 30 fresh || fail "$model: the textfile's run ($stamp) never reached a query: $(query efap2p_check_timestamp_seconds)"
		local got
		got=$(query 'efap2p_check_status{job="node"}')
		[ "$got" = "$want" ] || fail "$model: efap2p_check_status = '$got', want $want"
		echo "prometheus: $model: efap2p_check_status $got"
	}
	scrape p5.48xlarge 0
	"$tmp/check" p5.48xlarge "$efap2p" export --peer-blocked 0000:93:00.0 -o "$tmp/topology.json" >/dev/null 2>&1 || fail "export"
	scrape p5.48xlarge 1 "EFAP2P_TOPOLOGY=$tmp/topology.json"
	[ "$(query 'efap2p_check_pair_p2p{nic="0000:93:00.0",accelerator_name="GPU4"}')" = 0 ] || fail "the blocked pair is not 0"
	[ "$(query 'count(efap2p_check_pair_p2p == 0 and on(instance, accelerator, nic) efap2p_check_pair_local == 1)')" = 1 ] ||
		fail "the alert's expression does not find the one local pair"
	scrape cpu-node 2
	scrape trn2.48xlarge 1
	;;
nfd)
	mkdir -p "$tmp/features.d"
	# labels MODEL: the feature file written inside the emulated host, read
	# back and validated with NFD's label rules (nodecheck.ParseNFD)
	labels() {
		"$tmp/check" "$1" "$efap2p" check --format nfd -o "$tmp/features.d/efap2p" >/dev/null 2>&1
		(cd "$src" && go run ./ctests/fleet/nfdlabels "$tmp/features.d/efap2p") || fail "$1: labels do not validate"
	}
	out=$(labels p5.48xlarge)
	grep -qx 'feature.node.kubernetes.io/efa.p2p=true' <<<"$out" || fail "p5.48xlarge: $out"
	grep -qx 'feature.node.kubernetes.io/efa.instance-type=p5.48xlarge' <<<"$out" || fail "p5.48xlarge: $out"
	grep -qx 'feature.node.kubernetes.io/efa.devices=32' <<<"$out" || fail "p5.48xlarge: $out"
	out=$(labels cpu-node)
	grep -qx 'feature.node.kubernetes.io/efa.p2p=false' <<<"$out" || fail "cpu-node: $out"
	grep -qx 'feature.node.kubernetes.io/efa.p2p.status=not-applicable' <<<"$out" || fail "cpu-node: $out"
	out=$(labels trn2.48xlarge)
	grep -qx 'feature.node.kubernetes.io/efa.p2p=false' <<<"$out" || fail "trn2.48xlarge (libefa 44 claims no efa3): $out"
	echo "nfd: p5.48xlarge efa.p2p=true; cpu-node, trn2.48xlarge efa.p2p=false"
	;;
*) fail "unknown scenario $scenario" ;;
esac
echo "fleet.$scenario: ok"
