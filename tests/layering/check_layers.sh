#!/bin/sh
# The layering of core/ (docs/design.md, "Layers"), checked on the tree and on the built objects:
#   1. every core folder's README.md has one "Calls: a, b" line naming only folders listed
#      before it in core/layers.cmake's WEFT_LAYERS (bottom to top): no cycle, no upward call;
#   2. no source or header of a folder includes a header of a folder outside its reach (what it
#      calls, and what those call);
#   3. no object of a folder uses a symbol defined by a folder outside its reach (an upward call
#      through a hand-written declaration compiles, but shows here);
#   4. docs/design.md's table names, per folder, exactly the README's calls;
#   5. nothing in core/ includes a header of plugins/ (CORE_DIR/../plugins) or uses a symbol
#      a plugin's object defines (PLUGIN_OBJECTS: one object or archive per line): the library
#      target hands plugins to the core (a registration), never the core reaching into one.
# Usage: check_layers.sh CORE_DIR OBJECTS_FILE DESIGN_MD [PLUGIN_OBJECTS]
#        (OBJECTS_FILE: "folder object" lines)
set -eu
core=$1
objects=$2
design=$3
plugin_objects=${4:-}
plugins=$(dirname "$core")/plugins
tmp=${TMPDIR:-/tmp}/weft-layers.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
fail=0

# The order, from layers.cmake.
sed -n '/^set(WEFT_LAYERS/,/)/p' "$core/layers.cmake" | sed 's/^set(WEFT_LAYERS//; s/)//' |
  tr ' ' '\n' | grep -v '^$' > "$tmp/order"
[ -s "$tmp/order" ] || { echo "no WEFT_LAYERS in $core/layers.cmake"; exit 1; }

# 1. calls per folder, in order; reach = calls + their reach.
: > "$tmp/calls"
for d in $(cat "$tmp/order"); do
  [ -f "$core/$d/README.md" ] || { echo "core/$d has no README.md"; fail=1; continue; }
  line=$(grep '^Calls:' "$core/$d/README.md" || true)
  n=$(printf '%s\n' "$line" | grep -c '^Calls:' || true)
  if [ "$n" -ne 1 ]; then
    echo "core/$d/README.md: needs exactly one 'Calls:' line (found $n)"
    fail=1
    continue
  fi
  calls=$(printf '%s\n' "$line" | sed 's/^Calls:[ ]*//; s/[. ]*$//; s/,/ /g')
  [ "$calls" = "nothing" ] && calls=""
  echo "$d $calls" >> "$tmp/calls"
done
for d in $(ls "$core"); do
  [ -f "$core/$d/README.md" ] || continue
  grep -qx "$d" "$tmp/order" || { echo "core/$d is not in WEFT_LAYERS (core/layers.cmake)"; fail=1; }
done
awk '
  { below = ""; for (i = 2; i <= NF; i++) {
      if (!($i in seen)) { printf "core/%s calls %s, which is not below it: a call goes up (or a cycle)\n", $1, $i; bad = 1 }
      else below = below " " $i " " reach[$i]
    }
    seen[$1] = 1
    # dedupe
    n = split(below, a, " "); out = ""; delete u
    for (j = 1; j <= n; j++) if (!(a[j] in u)) { u[a[j]] = 1; out = out " " a[j] }
    reach[$1] = out
    print $1 out > "'"$tmp/reach"'"
  }
  END { exit bad }' "$tmp/calls" || fail=1

in_reach() { # folder other
  awk -v d="$1" -v o="$2" '$1 == d { for (i = 2; i <= NF; i++) if ($i == o) f = 1 } END { exit !f }' "$tmp/reach"
}

# 2. includes.
for d in $(cat "$tmp/order"); do
  [ -d "$core/$d" ] || continue
  find "$core/$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) |
    sort | while read -r f; do
      grep -o '#include "[a-z_]*/' "$f" | sed 's/#include "//; s/\///' | sort -u |
        while read -r o; do
          [ "$o" = "$d" ] && continue
          grep -qx "$o" "$tmp/order" || continue
          in_reach "$d" "$o" || echo "${f#"$core"/} includes a header of $o/, outside core/$d's reach"
        done
    done
done > "$tmp/inc"
if [ -s "$tmp/inc" ]; then cat "$tmp/inc"; fail=1; fi

# 3. symbols of the objects.
[ -s "$objects" ] || { echo "no objects listed in $objects"; exit 1; }
nobj=0
: > "$tmp/def"
: > "$tmp/undef"
while read -r d o; do
  [ -f "$o" ] || { echo "object $o (core/$d) is missing: build first"; fail=1; continue; }
  nobj=$((nobj + 1))
  nm "$o" | awk -v d="$d" -v o="$o" -v def="$tmp/def" -v und="$tmp/undef" '
    NF == 3 && $2 ~ /^[TDBRVWC]$/ { print $3, d >> def }
    NF == 2 && $1 == "U" { print $2, d, o >> und }'
done < "$objects"
awk -v reachf="$tmp/reach" -v core="$core/" '
  BEGIN { while ((getline l < reachf) > 0) { n = split(l, a, " "); for (i = 2; i <= n; i++) r[a[1] " " a[i]] = 1 } }
  FNR == NR { owner[$1] = $2; next }
  ($1 in owner) && owner[$1] != $2 && !(($2 " " owner[$1]) in r) {
    printf "%s (core/%s) uses %s of core/%s/, outside its reach\n", $3, $2, $1, owner[$1]; bad = 1
  }
  END { exit bad }' "$tmp/def" "$tmp/undef" || fail=1

# 4. docs/design.md's table: | `folder/` | owns | calls |
awk '
  /^## Layers/ { on = 1; next }
  on && /^## / { on = 0 }
  on && /^\| `[a-z_]+\/` \|/ {
    n = split($0, c, "|"); name = c[2]; gsub(/[ `\/]/, "", name)
    calls = c[n - 1]; gsub(/`/, "", calls); gsub(/\//, "", calls); gsub(/ /, "", calls)
    if (calls == "—" || calls == "-" || calls == "nothing") calls = ""
    gsub(/,/, " ", calls); print name, calls
  }' "$design" > "$tmp/design"
words() { for w in "$@"; do echo "$w"; done | sort | tr '\n' ' '; }
while read -r d calls; do
  # shellcheck disable=SC2086
  want=$(words $calls)
  row=$(awk -v d="$d" '$1 == d' "$tmp/design")
  if [ -z "$row" ]; then
    echo "docs/design.md's layers table has no row for $d/"
    fail=1
    continue
  fi
  # shellcheck disable=SC2086
  got=$(words $(echo $row | cut -d' ' -f2-))
  [ "$(echo $row | wc -w)" -eq 1 ] && got=""
  [ "$got" = "$want" ] || { echo "docs/design.md says $d/ calls '$got'; core/$d/README.md says '$want'"; fail=1; }
done < "$tmp/calls"

# 5. core/ -> plugins/: an include naming plugins/, or of a header that only plugins/ has (a
# plugin's folder on a core target's include path); a plugin object's symbol used by the core.
if [ -d "$plugins" ]; then
  find "$plugins" -name '*.h' -exec basename {} \; | sort -u > "$tmp/plugin_h"
  find "$core" "$(dirname "$core")/abi" -name '*.h' -exec basename {} \; 2>/dev/null |
    sort -u > "$tmp/core_h"
  comm -23 "$tmp/plugin_h" "$tmp/core_h" > "$tmp/only_plugin_h"
  find "$core" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort |
    while read -r f; do
      sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
        case $inc in
          *plugins/*) echo "${f#"$core"/} includes $inc: core/ includes nothing from plugins/" ;;
          *) if grep -qx "$(basename "$inc")" "$tmp/only_plugin_h"; then
               echo "${f#"$core"/} includes $inc, a header of plugins/: core/ includes nothing from plugins/"
             fi ;;
        esac
      done
    done > "$tmp/pinc"
  if [ -s "$tmp/pinc" ]; then cat "$tmp/pinc"; fail=1; fi
fi
npobj=0
if [ -n "$plugin_objects" ]; then
  : > "$tmp/pdef"
  while read -r o; do
    [ -n "$o" ] || continue
    [ -f "$o" ] || { echo "plugin object $o is missing: build first"; fail=1; continue; }
    npobj=$((npobj + 1))
    nm "$o" | awk -v o="$o" 'NF == 3 && $2 ~ /^[TDBRVWC]$/ { print $3, o }' >> "$tmp/pdef"
  done < "$plugin_objects"
  # (a name core/ defines itself resolves to core/'s own)
  awk 'FILENAME == ARGV[1] { own[$1] = 1; next }
    FILENAME == ARGV[2] { if (!($1 in p)) p[$1] = $2; next }
    ($1 in p) && !($1 in own) { printf "%s (core/%s) uses %s of plugins/ (%s): core/ calls no plugin\n", $3, $2, $1, p[$1]; bad = 1 }
    END { exit bad }' "$tmp/def" "$tmp/pdef" "$tmp/undef" || fail=1
fi

[ "$fail" -eq 0 ] || exit 1
echo "layers ok: $(wc -l < "$tmp/order") folders, $nobj objects, no upward include or symbol, design table matches; nothing from plugins/ ($npobj plugin objects)"
