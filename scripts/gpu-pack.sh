#!/usr/bin/env bash
# On the GPU machine: runs a command with $OUT pointing at a scratch folder,
# with at most LIMIT_S seconds (default 560), then packs that folder into
# $OUT/pack.tgz however the command ended, and prints every summary line.
# The device tool brings back only a few files from $OUT, and nothing from a
# call that outlived its limit; this keeps both in hand.
#   bash scripts/gpu-pack.sh bash scripts/gpu-verify.sh mixes tests
set -u
real=${OUT:?OUT must be set}
work=$(mktemp -d)
OUT=$work timeout -k 5 "${LIMIT_S:-560}" "$@"
rc=$?
tar czf "$real/pack.tgz" -C "$work" .
grep -rhE "^(SUMMARY|repro |STALL|OK kinds)|run [0-9]+: (STALLED|rc=[1-9])" "$work" --include='*.txt' | sort | uniq -c
echo "gpu-pack: rc=$rc"
exit $rc
