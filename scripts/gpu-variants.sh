#!/usr/bin/env bash
# Builds one benchmark binary per variant of the code, so that a single GPU
# call can time the variants against each other in alternating rounds (the
# spread between processes on the GPU machine is larger than most changes,
# so one run per variant decides nothing).
#
#   bash scripts/gpu-variants.sh DIR [--bench NAME] VARIANT...
#
# VARIANT is NAME=SOURCE, where SOURCE is
#   .             the working tree as it is;
#   FILE.patch    the working tree with the patch applied (reverted after);
#   REF           a branch or commit: the working tree with REF's own changes
#                 (`git diff HEAD...REF`, since the two met) applied, reverted after.
# DIR receives bench-NAME per variant (kernels bench unless --bench), and
# rounds.sh, which runs on the GPU machine:
#   bash DIR/rounds.sh ROUNDS [BENCH ARGUMENTS...]   e.g. 3 sort
# and prints each variant's rounds and, per row, the median of each variant
# (CSV rows as the benches print them: impl,kernel,params,seconds,value,unit
# or impl,resource,workload,params,seconds,ns_per_op,failed).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: gpu-variants.sh DIR [--bench NAME] NAME=SOURCE...}
shift
bench=kernels
if [ "${1:-}" = --bench ]; then
  bench=${2:?--bench needs a name}
  shift 2
fi
[ $# -gt 0 ] || { echo "gpu-variants: no variant given" >&2; exit 2; }
mkdir -p "$dir"

executable() {
  cargo bench --bench "$bench" --no-run --message-format=json-render-diagnostics 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["executable"])'
}

patch=""
revert() {
  if [ -n "$patch" ]; then
    git apply -R "$patch"
    rm -f "$patch"
    patch=""
  fi
}
trap revert EXIT

names=()
for v in "$@"; do
  name=${v%%=*}
  source=${v#*=}
  [ "$name" != "$v" ] && [ -n "$name" ] || { echo "gpu-variants: $v is not NAME=SOURCE" >&2; exit 2; }
  if [ "$source" != . ]; then
    tmp=$(mktemp)
    if [ -f "$source" ]; then
      cp "$source" "$tmp"
    else
      git diff "HEAD...$source" >"$tmp"
    fi
    git apply "$tmp"
    patch=$tmp
  fi
  exe=$(executable)
  [ -n "$exe" ] || { echo "gpu-variants: the $bench bench of $name did not build" >&2; exit 1; }
  cp "$exe" "$dir/bench-$name"
  strip --strip-debug "$dir/bench-$name" 2>/dev/null || true
  revert
  names+=("$name")
  echo "gpu-variants: built $dir/bench-$name ($source)"
done

cat >"$dir/rounds.sh" <<EOF
#!/usr/bin/env bash
# Written by scripts/gpu-variants.sh: alternating rounds of ${names[*]}.
#   bash rounds.sh ROUNDS [BENCH ARGUMENTS...]
set -u
here=\$(cd "\$(dirname "\$0")" && pwd)
rounds=\${1:?usage: rounds.sh ROUNDS [BENCH ARGUMENTS...]}
shift
log=\$(mktemp)
for round in \$(seq "\$rounds"); do
  for v in ${names[*]}; do
    echo "== \$v round \$round"
    timeout "\${ROUND_TIMEOUT:-120}" "\$here/bench-\$v" "\$@" 2>&1 | grep -v "^impl"
  done
done | tee "\$log"
python3 - "\$log" ${names[*]} <<'PY'
import collections, statistics, sys
values = collections.defaultdict(list)
variant = None
for line in open(sys.argv[1]):
    if line.startswith("== "):
        variant = line.split()[1]
        continue
    f = line.strip().split(",")
    if len(f) == 6:      # kernels: impl,kernel,params,seconds,value,unit
        row, value = f"{f[1]} {f[2]} ({f[5]})", f[4]
    elif len(f) == 7:    # allocators: impl,resource,workload,params,seconds,ns_per_op,failed
        row, value = f"{f[1]} {f[2]} {f[3]} (ns/op)", f[5]
    else:
        continue
    try:
        values[(row, variant)].append(float(value))
    except ValueError:
        pass
names = sys.argv[2:]
print("median of the rounds per variant:")
for row in sorted({r for r, _ in values}):
    cells = [f"{n}={statistics.median(values[(row, n)]):.2f}" for n in names if (row, n) in values]
    print(f"{row:45s} " + " ".join(cells))
PY
rm -f "\$log"
EOF
chmod +x "$dir/rounds.sh"
echo "gpu-variants: $dir/rounds.sh times ${names[*]}"
