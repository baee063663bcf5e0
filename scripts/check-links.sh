#!/usr/bin/env bash
# Checks that every relative link in README.md and docs/*.md names a file or
# folder of the repository (web links and in-page anchors are not checked),
# and that no link leaves the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
bad=0
for md in README.md docs/*.md; do
  dir=$(dirname "$md")
  while IFS= read -r target; do
    path=${target%%#*}
    case "$target" in http://* | https://* | mailto:* | '#'*) continue ;; esac
    full=$(realpath -m "$dir/$path")
    if [ ! -e "$full" ]; then
      echo "$md: broken link: $target"; bad=1
    elif [ "${full#"$root"/}" = "$full" ] && [ "$full" != "$root" ]; then
      echo "$md: link outside the repository: $target"; bad=1
    fi
  done < <(grep -o '\](\([^)]*\))' "$md" | sed 's/^](//; s/)$//; s/ .*//')
done
[ "$bad" -eq 0 ] && echo "links: all resolve"
exit "$bad"
