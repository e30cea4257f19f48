#!/usr/bin/env bash
# A shell's redirections onto descriptors 3 and 4 (exec 3>...), under the
# preload with the shell's heap shared: the runtime's memfds held those
# numbers, the redirection replaced them, and the next command
# substitution's fork ran nothing ("head: No such file or directory").
set -u
a=$(head -c 100000 /dev/zero | tr '\0' a)
exec 3>/dev/null 4>&3
echo "${#a}" >&3
b=$(head -c 300000 /dev/zero | tr '\0' b)
echo "length ${#b}"
