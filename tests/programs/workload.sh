# bash's own work, for programs/run.sh: strings grown by appending (realloc
# in place), arrays, associative arrays, substitutions, a read loop and
# subshells.  Everything it computes goes to stdout.
s=
for ((i = 0; i < 20000; i++)); do s+="x$i"; done
echo "length ${#s}"
declare -a a
for ((i = 0; i < 5000; i++)); do a[i]=$((i * i % 9973)); done
sum=0
for v in "${a[@]}"; do ((sum += v)); done
echo "sum $sum"
declare -A h
for ((i = 0; i < 5000; i++)); do h["k$((i % 2500))"]+="$i,"; done
echo "keys ${#h[@]}, k42 holds ${#h[k42]}"
r=${s//x1/Y}
echo "replaced ${#r}, upper ${s^^}" | cut -c1-60
n=0
while IFS= read -r line; do n=$((n + ${#line})); done < <(seq 1 5000)
echo "read $n"
big=$(head -c 2000000 /dev/zero | tr '\0' 'a')
echo "big ${#big}, reversed $(printf '%s' "$big" | rev | wc -c)"
(printf '%s' "${s:0:50000}" | md5sum)
