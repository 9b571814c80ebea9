# The per-uid thread channel without root (stop 55). Build: mkdir -p /tmp/uprobe && gcc -O1 -pthread -o /tmp/uprobe/threads per_user_threads.c; run as root: sh per_user_threads.sh 512 "" (as before), sh per_user_threads.sh 65536 "prlimit --nproc=512:512 --" (the fix)
# $1: outer nproc before bwrap; $2: inner prefix
OUT=$1; IN=$2
B="bwrap --unshare-user --uid 65534 --gid 65534 --ro-bind / / --dev /dev --proc /proc --"
setpriv --reuid=4242 --regid=4242 --clear-groups sh -c "prlimit --nproc=$OUT:$OUT -- $B $IN /tmp/uprobe/threads 0"
setpriv --reuid=4242 --regid=4242 --clear-groups sh -c "prlimit --nproc=$OUT:$OUT -- $B $IN /tmp/uprobe/threads 300 & sleep 0.5; prlimit --nproc=$OUT:$OUT -- $B $IN /tmp/uprobe/threads 0; wait"
