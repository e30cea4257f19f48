#!/bin/sh
# expect_refusal.sh LIBADSM STATUS MESSAGE PROGRAM [ARGS...]: runs PROGRAM
# with the runtime preloaded; passes when it exits with STATUS ("nonzero":
# any failure) and its output holds MESSAGE.
lib=$1 status=$2 message=$3
shift 3
out=$(LD_PRELOAD=$lib "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$status" = nonzero ]; then
    [ $rc -ne 0 ] || { echo "FAIL: exit status 0, expected a failure"; exit 1; }
else
    [ $rc -eq "$status" ] || { echo "FAIL: exit status $rc, expected $status"; exit 1; }
fi
case $out in
*"$message"*) echo "PASS: refused as expected" ;;
*) echo "FAIL: no \"$message\" in the output"; exit 1 ;;
esac
