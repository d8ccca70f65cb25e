#!/bin/sh
# SPDX-License-Identifier: MIT
# Inside an emulated host: write its boot-time topology file, as
# efap2p-topology.service does at boot, then run the command.
#   with_topology.sh EFAP2P COMMAND [ARGS...]
set -e
efap2p=$1
shift
"$efap2p" export --boot 2>/dev/null
exec "$@"
