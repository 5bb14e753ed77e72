#!/bin/sh
# check_layers.sh on a two-folder tree of its own: clean, it passes; with a call from the lower
# folder up into the upper one through a hand-written declaration (which compiles), with an
# upward include, with an include of or a call into plugins/, or with a design table that
# disagrees, it fails naming the culprit.
# Usage: selftest.sh CHECK_LAYERS_SH CC
set -eu
check=$1
cc=$2
t=${TMPDIR:-/tmp}/weft-layers-self.$$
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/core/low" "$t/core/high" "$t/docs" "$t/obj"
echo 'set(WEFT_LAYERS low high)' > "$t/core/layers.cmake"
printf '# low\n\nCalls: nothing.\n' > "$t/core/low/README.md"
printf '# high\n\nCalls: low.\n' > "$t/core/high/README.md"
cat > "$t/docs/design.md" <<'MD'
## Layers

| folder | owns | calls |
|---|---|---|
| `high/` | the top | low |
| `low/` | the bottom | — |

## Next
MD
printf 'int low_fn(int x) { return x + 1; }\n' > "$t/core/low/low.c"
printf 'int low_fn(int x);\nint high_fn(int x) { return low_fn(x) * 2; }\n' > "$t/core/high/high.c"
build() {
  $cc -c "$t/core/low/low.c" -o "$t/obj/low.o"
  $cc -c "$t/core/high/high.c" -o "$t/obj/high.o"
  printf 'low %s\nhigh %s\n' "$t/obj/low.o" "$t/obj/high.o" > "$t/objects"
}
expect_fail() { # what pattern
  if sh "$check" "$t/core" "$t/objects" "$t/docs/design.md" > "$t/out" 2>&1; then
    echo "FAIL: check_layers passed with $1"; cat "$t/out"; exit 1
  fi
  grep -q "$2" "$t/out" || { echo "FAIL: $1 not named (want '$2'):"; cat "$t/out"; exit 1; }
  echo "ok: $1 -> $(grep "$2" "$t/out" | head -1)"
}
build
sh "$check" "$t/core" "$t/objects" "$t/docs/design.md"
# An upward call through a declaration: low uses high_fn.
printf 'int high_fn(int x);\nint low_fn(int x) { return x > 0 ? high_fn(x - 1) : 0; }\n' > "$t/core/low/low.c"
build
expect_fail "an upward symbol" "uses high_fn of core/high/"
printf 'int low_fn(int x) { return x + 1; }\n' > "$t/core/low/low.c"
# An upward include.
printf '#include "high/high.h"\n' > "$t/core/low/low.h"
expect_fail "an upward include" "low/low.h includes a header of high/"
rm "$t/core/low/low.h"
# A cycle: low says it calls high.
printf '# low\n\nCalls: high.\n' > "$t/core/low/README.md"
expect_fail "a cycle" "core/low calls high, which is not below it"
printf '# low\n\nCalls: nothing.\n' > "$t/core/low/README.md"
# core/ reaching into plugins/: an include of a plugin's header (by path, or by name through a
# plugin folder on the include path), and a use of a plugin object's symbol.
mkdir -p "$t/plugins/net-x"
printf 'int plug_fn(int x);\n' > "$t/plugins/net-x/plug.h"
printf 'int plug_fn(int x) { return x - 1; }\n' > "$t/plugins/net-x/plug.c"
$cc -c "$t/plugins/net-x/plug.c" -o "$t/obj/plug.o"
echo "$t/obj/plug.o" > "$t/plugin_objects"
build
sh "$check" "$t/core" "$t/objects" "$t/docs/design.md" "$t/plugin_objects"
printf '#include "../../plugins/net-x/plug.h"\n' > "$t/core/low/low.h"
expect_fail "an include of plugins/ by path" "low/low.h includes ../../plugins/net-x/plug.h"
printf '#include "plug.h"\n' > "$t/core/low/low.h"
expect_fail "an include of a plugin's header" "low/low.h includes plug.h, a header of plugins/"
rm "$t/core/low/low.h"
printf 'int plug_fn(int x);\nint low_fn(int x) { return plug_fn(x); }\n' > "$t/core/low/low.c"
build
if sh "$check" "$t/core" "$t/objects" "$t/docs/design.md" "$t/plugin_objects" > "$t/out" 2>&1; then
  echo "FAIL: check_layers passed with a plugin symbol used by core/"; cat "$t/out"; exit 1
fi
grep -q "uses plug_fn of plugins/" "$t/out" || { echo "FAIL: plugin symbol not named:"; cat "$t/out"; exit 1; }
echo "ok: a plugin symbol -> $(grep "uses plug_fn" "$t/out")"
printf 'int low_fn(int x) { return x + 1; }\n' > "$t/core/low/low.c"
build
# The design table disagrees.
sed -i 's/| `high\/` | the top | low |/| `high\/` | the top | — |/' "$t/docs/design.md"
expect_fail "a stale design table" "docs/design.md says high/ calls"
echo "selftest ok"
