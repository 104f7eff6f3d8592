#!/bin/sh
# nsrsh.sh - the remote shell Open MPI's launcher uses in the two-host
# test (mpi.exp): "nsrsh.sh HOST COMMAND..." runs COMMAND in the
# network namespace HOST stands for, with a host name of its own, as
# ssh would on another machine.  TSR_NSRSH_MAP holds "ADDRESS=NETNS"
# pairs, space-separated.
host=$1
shift
for pair in $TSR_NSRSH_MAP; do
  if [ "${pair%%=*}" = "$host" ]; then
    ns=${pair#*=}
    exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; $*"
  fi
done
echo "nsrsh.sh: no network namespace for host '$host'" >&2
exit 1
