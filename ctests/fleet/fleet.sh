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
#   taskprolog  slurmd runs the packaged TaskProlog (dist/
#               efap2p-slurm-taskprolog) before srun's tasks, in an emulated
#               host: a healthy p5.48xlarge's task gets NCCL_TOPO_FILE and
#               no FI_HMEM_DISABLE_P2P, one whose NICs are all
#               firmware-blocked (boot-time file) FI_HMEM_DISABLE_P2P=1 and
#               the reason in its output; a user's variable is kept, one an
#               earlier efap2p env set is unset
#   podman      the DaemonSet's container (dist/efap2p-check.daemonset.yaml)
#               run by podman as the kubelet would run it: the image make
#               image built ($EFAP2P_IMAGE, loaded from $EFAP2P_IMAGE_ARCHIVE),
#               the manifest's command, args, securityContext, memory limit
#               and mounts, /sys read-only (an emulated host's tree as a
#               process without capabilities sees it), the boot-time file
#               root wrote for that host mounted at /run/efap2p or not
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
	# podman's store: its containers and what they left mounted
	[ -z "${store:-}" ] || efap2p_podman "$store" system reset -f >/dev/null 2>&1
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

# slurm_start EXTRA: a one-node cluster of this host ($node) on loopback:
# munged with its own key and socket (as the munge user), slurmctld and
# slurmd with $SLURM_CONF, whose lines are the common ones, then EXTRA's
# (the scenario's TaskProlog or health check), then the node's.
slurm_start() {
	dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 status=none
	mkdir "$tmp/munge" && chown munge:munge "$tmp/munge" "$tmp/munge.key" && chmod 755 "$tmp/munge" && chmod 400 "$tmp/munge.key"
	runuser -u munge -- munged --foreground --socket="$tmp/munge/socket" --key-file="$tmp/munge.key" \
		--pid-file="$tmp/munge/pid" --log-file="$tmp/munge/log" --seed-file="$tmp/munge/seed" &
	pids+=($!)
	until_ok 10 test -S "$tmp/munge/socket" || fail "munged did not start"
	local ctld slurmd_port
	ctld=$(free_port) slurmd_port=$(free_port)
	mkdir "$tmp/state" "$tmp/spool"
	{
		cat <<-CONF
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
		CONF
		printf '%s\n' "$1"
		cat <<-CONF
		NodeName=$node NodeAddr=127.0.0.1 CPUs=1 RealMemory=1 State=UNKNOWN
		PartitionName=fleet Nodes=$node Default=YES State=UP
		CONF
	} >"$SLURM_CONF"
	logs="$tmp/slurmctld.log $tmp/slurmd.log"
	slurmctld -D -i -f "$SLURM_CONF" >"$tmp/slurmctld.out" 2>&1 &
	pids+=($!)
	until_ok 30 scontrol ping >/dev/null 2>&1 || fail "slurmctld did not answer"
	slurmd -D -N "$node" -f "$SLURM_CONF" >"$tmp/slurmd.out" 2>&1 &
	pids+=($!)
}

# taskprolog: srun's tasks through slurmd and the packaged TaskProlog, in
# the emulated host $tmp/task-host starts: the scenario file names its
# model and the NICs export --boot records as firmware-blocked.
# EFAP2P_FLEET_WRONG replaces the host with that model, nothing blocked.
taskprolog() {
	local c
	for c in slurmctld slurmd munged scontrol srun sinfo; do command -v $c >/dev/null || skip "$c missing (Debian packages slurm-wlm, munge)"; done
	local node out
	node=$(hostname -s)
	export SLURM_CONF=$tmp/slurm.conf
	sed -e "s|@bindir@|$(dirname "$efap2p")|g" -e "s|@datadir@|$src/dist|g" "$src/dist/efap2p-slurm-taskprolog.in" >"$tmp/slurm-taskprolog"
	chmod 755 "$tmp/slurm-taskprolog"
	cat >"$tmp/task-host" <<-SH
	#!/bin/sh
	. $tmp/scenario
	if [ -n "\${EFAP2P_FLEET_WRONG:-}" ]; then MODEL=\$EFAP2P_FLEET_WRONG BLOCKED=; fi
	exec "$efap2p" sim --machine "\$MODEL" -- sh -c '"\$0" export --boot \${1:+--peer-blocked "\$1"} >/dev/null 2>&1 || exit 99; shift; exec "\$@"' "$efap2p" "\$BLOCKED" "\$@"
	SH
	chmod 755 "$tmp/task-host"
	slurm_start "TaskProlog=$tmp/slurm-taskprolog"
	idle() { [ "$(sinfo -h -n "$node" -o '%T' 2>/dev/null)" = idle ]; }
	until_ok 60 idle || fail "the node is not idle: $(sinfo -h -n "$node" -o '%T %E')"
	# task [VAR=value...]: the task's environment in the emulated host,
	# with those variables in srun's (and so the task's), and the number
	# of GPUs with gdr="1" in the NCCL topology it names, as the task reads it
	task() {
		env "$@" "$tmp/task-host" timeout 120 srun -N1 -n1 sh -c 'env; echo "gdr_gpus=$(grep -c "<gpu .*gdr=\"1\"" "$NCCL_TOPO_FILE")"' 2>&1
	}
	has() { grep -qx -- "$1" <<<"$out" || fail "$2: the task has no $1; it has: $(grep -E '^(NCCL_TOPO_FILE|FI_HMEM_DISABLE_P2P|EFAP2P_ENV|gdr_gpus)=|^efap2p' <<<"$out" | paste -sd' ' -)"; }
	hasnt() { ! grep -q -- "^$1" <<<"$out" || fail "$2: the task has $(grep -- "^$1" <<<"$out")"; }

	echo "MODEL=p5.48xlarge BLOCKED=" >"$tmp/scenario"
	out=$(task)
	nccl=$(sed -n 's/^NCCL_TOPO_FILE=//p' <<<"$out")
	[ -n "$nccl" ] && [ "$(basename "$nccl")" = nccl-topology.xml ] || fail "healthy p5.48xlarge: NCCL_TOPO_FILE='$nccl'"
	hasnt FI_HMEM_DISABLE_P2P= "healthy p5.48xlarge"
	has EFAP2P_ENV=NCCL_TOPO_FILE "healthy p5.48xlarge"
	has gdr_gpus=8 "healthy p5.48xlarge's NCCL topology"
	grep -qx 'SYSFS_PATH=.*' <<<"$out" || fail "the task did not run in the emulated host"
	echo "taskprolog: healthy p5.48xlarge: NCCL_TOPO_FILE=$(basename "$nccl") (8 GPUs with gdr=\"1\"), no FI_HMEM_DISABLE_P2P"

	# what the user set is kept; what an earlier efap2p env set is decided again
	out=$(task FI_HMEM_DISABLE_P2P=1)
	has FI_HMEM_DISABLE_P2P=1 "the user's FI_HMEM_DISABLE_P2P=1"
	out=$(task FI_HMEM_DISABLE_P2P=1 EFAP2P_ENV=FI_HMEM_DISABLE_P2P,NCCL_TOPO_FILE NCCL_TOPO_FILE=/elsewhere.xml)
	hasnt FI_HMEM_DISABLE_P2P= "an earlier efap2p env's FI_HMEM_DISABLE_P2P (unset)"
	grep -qx 'NCCL_TOPO_FILE=/.*/run/efap2p/nccl-topology.xml' <<<"$out" || fail "an earlier efap2p env's NCCL_TOPO_FILE: $(grep NCCL_TOPO_FILE <<<"$out")"
	echo "taskprolog: the user's FI_HMEM_DISABLE_P2P=1 kept; an earlier efap2p env's unset"

	# every NIC's firmware blocks peers: recorded, and carried into the
	# boot-time file by export --boot
	local nics
	nics=$("$efap2p" sim --machine p5.48xlarge -- sh -c 'for d in "$SYSFS_PATH"/class/infiniband/*; do basename "$(readlink -f "$d/device")"; done' | paste -sd, -)
	[ "$(tr , '\n' <<<"$nics" | grep -c .)" = 32 ] || fail "p5.48xlarge's EFA NICs: $nics"
	echo "MODEL=p5.48xlarge BLOCKED=$nics" >"$tmp/scenario"
	out=$(task)
	has FI_HMEM_DISABLE_P2P=1 "firmware-blocked p5.48xlarge"
	has EFAP2P_ENV=FI_HMEM_DISABLE_P2P,NCCL_TOPO_FILE "firmware-blocked p5.48xlarge"
	has gdr_gpus=0 "firmware-blocked p5.48xlarge's NCCL topology"
	local why
	why=$(grep '^efap2p: no GPUDirect RDMA for this task' <<<"$out") || fail "firmware-blocked p5.48xlarge: no print line in the task's output:$(printf '\n%s' "$out" | grep -v '^[A-Z_a-z0-9]*=')"
	[[ $why == *"(efap2p check: p2p-refused: GPU0 0000:53:00.0: P2P DMA refused with 4 of its 4 switch-local EFA NICs"*"aws-ofi-nccl requires GPUDirect RDMA on p5.48xlarge and will not run there"* ]] ||
		fail "firmware-blocked p5.48xlarge: the task's output says: $why"
	echo "taskprolog: firmware-blocked p5.48xlarge: FI_HMEM_DISABLE_P2P=1, no GPU with gdr=\"1\"; the task's output: ${why:0:120}..."
}

case $scenario in
slurm)
	for c in slurmctld slurmd munged scontrol sinfo; do command -v $c >/dev/null || skip "$c missing (Debian packages slurm-wlm, munge)"; done
	node=$(hostname -s)
	export SLURM_CONF=$tmp/slurm.conf
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
	slurm_start "$(printf '%s\n' "HealthCheckProgram=$tmp/hc" "HealthCheckInterval=1" "HealthCheckNodeState=ANY")"
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
taskprolog) taskprolog ;;
podman)
	for c in podman runc; do command -v $c >/dev/null || skip "$c missing (Debian packages podman, runc)"; done
	python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml missing"
	[ -n "${EFAP2P_IMAGE:-}" ] && [ -e "${EFAP2P_IMAGE_ARCHIVE:-}" ] || skip "no image: make fleet-test builds it (make image)"
	. "$src/scripts/podman.sh"
	store=$tmp/podman
	efap2p_podman "$store" load -q -i "$EFAP2P_IMAGE_ARCHIVE" >/dev/null || fail "podman load -i $EFAP2P_IMAGE_ARCHIVE"
	efap2p_podman "$store" image exists "$EFAP2P_IMAGE" || fail "$EFAP2P_IMAGE_ARCHIVE holds no $EFAP2P_IMAGE"
	manifest=$src/dist/efap2p-check.daemonset.yaml
	# podman's arguments for the manifest's container, as the kubelet would
	# run it: ARGS MANIFEST IMAGE HOST_DIR, NUL-separated
	cat > "$tmp/podman-args.py" <<-'PY'
	import json, sys, yaml
	ds = yaml.safe_load(open(sys.argv[1]))
	image, host = sys.argv[2], sys.argv[3]
	spec = ds["spec"]["template"]["spec"]
	(c,) = spec["containers"]
	assert c["image"] == image, f"the manifest runs {c['image']}, make image builds {image}"
	# what kubelet does with each field; a field this does not know fails
	known = {"name", "image", "command", "args", "securityContext", "resources", "volumeMounts"}
	assert set(c) <= known, f"fields podman is not given: {set(c) - known}"
	sc = c.get("securityContext", {})
	assert set(sc) <= {"runAsUser", "readOnlyRootFilesystem", "allowPrivilegeEscalation", "capabilities"}, sc
	a = ["--name", "efap2p-check", "-d", "--network", "none"]
	if "runAsUser" in sc:
	    a += ["--user", str(sc["runAsUser"])]
	if sc.get("readOnlyRootFilesystem"):
	    a += ["--read-only", "--read-only-tmpfs=false"]
	if sc.get("allowPrivilegeEscalation") is False:
	    a += ["--security-opt", "no-new-privileges"]
	for cap in sc.get("capabilities", {}).get("drop", []):
	    a += ["--cap-drop", cap.lower()]
	mem = c.get("resources", {}).get("limits", {}).get("memory")
	if mem:
	    assert mem.endswith("Mi"), mem
	    a += ["--memory", mem[:-2] + "m"]
	# the hostPath volumes, each a folder of this emulated host
	places = {"/var/lib/prometheus/node-exporter": "textfile", "/etc/kubernetes/node-feature-discovery/features.d": "features.d",
	          "/run/efap2p": "run-efap2p", "/etc/efap2p": "etc-efap2p"}
	vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
	for m in c["volumeMounts"]:
	    a += ["-v", f"{host}/{places[vols[m['name']]]}:{m['mountPath']}" + (":ro" if m.get("readOnly") else "")]
	# kubelet gives an unprivileged container the node's /sys, read-only
	a += ["-v", f"{host}/sys:/sys:ro", "--entrypoint", json.dumps(c["command"]), c["image"]] + c["args"]
	sys.stdout.write("\0".join(a) + "\0")
	PY
	# daemonset NAME MODEL FILES [NIC]: runs the manifest's container on an
	# emulated MODEL until it has run its loop's checks once. FILES are the
	# host's topology files: boot (the boot-time file, which
	# efap2p-topology.service writes as root), etc (the operator's file
	# only) or none; NIC is a NIC recorded in the operator's file as
	# firmware-blocked (under EFAP2P_FLEET_WRONG, none is). Leaves the
	# textfile, the feature file and the logged line in $tmp/NAME/.
	daemonset() {
		local name=$1 m=${EFAP2P_FLEET_WRONG:-$2} files=$3 nic=${4:-} host=$tmp/$1
		[ -z "${EFAP2P_FLEET_WRONG:-}" ] || nic=
		mkdir -p "$host"/{textfile,features.d,run-efap2p,etc-efap2p}
		# the host as root sees it, with its files; and as a process without
		# capabilities reads it (64 bytes of config space): the container's /sys
		"$efap2p" sim write --machine "$m" "$host/root-view" >/dev/null || fail "sim write $m"
		if [ -n "$nic" ]; then
			"$efap2p" export --peer-blocked "$nic" --sysfs "$host/root-view" -o "$host/root-view/etc/efap2p/topology.json" >/dev/null 2>&1 ||
				fail "export --peer-blocked $nic"
		fi
		"$efap2p" export --boot --sysfs "$host/root-view" >/dev/null 2>&1 || fail "export --boot for $m"
		"$efap2p" sim write --unprivileged --machine "$m" "$host/sys" >/dev/null || fail "sim write --unprivileged $m"
		# where the runtime mounts the container's cgroup, as in any /sys
		mkdir -p "$host/sys/fs/cgroup"
		case $files in
		boot) cp "$host/root-view/run/efap2p/"topology.json* "$host/run-efap2p/" ;;
		etc) [ -z "$nic" ] || cp "$host/root-view/etc/efap2p/"topology.json* "$host/etc-efap2p/" ;;
		esac
		local -a args
		python3 "$tmp/podman-args.py" "$manifest" "$EFAP2P_IMAGE" "$host" > "$host/args" 2> "$host/args.err" ||
			fail "the manifest: $(tail -1 "$host/args.err")"
		mapfile -d '' args < "$host/args"
		efap2p_podman "$store" rm -f -t 0 efap2p-check >/dev/null 2>&1 || true
		efap2p_podman "$store" run "${args[@]}" >/dev/null || fail "podman run ${args[*]}"
		line() { efap2p_podman "$store" logs efap2p-check 2>&1 | grep -E '^(OK|PROBLEM|UNKNOWN)' | head -1; }
		logged() { [ -n "$(line)" ]; }
		until_ok 120 logged || fail "$name: the container logged no check line: $(efap2p_podman "$store" logs efap2p-check 2>&1 | tail -5)"
		line > "$host/line"
		efap2p_podman "$store" logs efap2p-check > "$host/log" 2>&1
		efap2p_podman "$store" rm -f -t 0 efap2p-check >/dev/null 2>&1
		! grep -v -E '^(OK|PROBLEM|UNKNOWN)' "$host/log" | grep -q . || fail "$name: the container logged more than its line: $(cat "$host/log")"
		grep -q '^efap2p_check_status ' "$host/textfile/efap2p.prom" || fail "$name: no efap2p_check_status in the textfile"
		grep -qx "efa.instance-type=$2" "$host/features.d/efap2p" || fail "$name: the feature file: $(cat "$host/features.d/efap2p")"
		echo "podman: $name ($2, files: $files${nic:+, $nic blocked}): $(cat "$host/line")"
	}
	daemonset healthy p5.48xlarge boot
	h=$tmp/healthy
	grep -q '^OK' "$h/line" || fail "healthy p5.48xlarge: $(cat "$h/line")"
	grep -qx 'efap2p_check_status 0' "$h/textfile/efap2p.prom" || fail "healthy p5.48xlarge: $(grep status "$h/textfile/efap2p.prom")"
	grep -qx 'efa.p2p=true' "$h/features.d/efap2p" || fail "healthy p5.48xlarge: the feature file: $(cat "$h/features.d/efap2p")"
	# what sysfs cannot show reaches the container through the files it
	# mounts read-only: the boot-time file (carrying the operator's
	# record), or the operator's file alone
	for f in boot etc; do
		daemonset "blocked-$f" p5.48xlarge "$f" 0000:93:00.0
		h=$tmp/blocked-$f
		grep -q '^PROBLEM.*0000:93:00.0' "$h/line" || fail "a firmware-blocked NIC in the $f file: $(cat "$h/line")"
		grep -qx 'efap2p_check_status 1' "$h/textfile/efap2p.prom" || fail "blocked-$f: $(grep status "$h/textfile/efap2p.prom")"
	done
	;;
*) fail "unknown scenario $scenario" ;;
esac
echo "fleet.$scenario: ok"
