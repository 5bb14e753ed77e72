#!/bin/sh
# Every NCCL_* / WEFT_* variable the code names is documented in docs/env.md (the generated
# table or "Read outside the table"). The code: quoted names in core/, plugins/, tools/ and
# conformance/ sources -- getenv's argument, params.def's names, a launcher's variable table.
# Names that are not settings are listed below with the reason; a new one is added there on
# purpose. Usage: env_names.sh SOURCE_DIR
set -eu
src=$1
doc=$src/docs/env.md
# Not settings: a cost-table marker and NCCL's pointer-type constants named in messages, NCCL's
# API constants and initializers named in messages (window flags, the device API's and the
# simulation's initializers), and prefixes (a family of names each documented on its own).
not_settings="NCCL_ALGO_PROTO_IGNORE NCCL_PTR_HOST NCCL_PTR_CUDA NCCL_PTR_DMABUF NCCL_PROTO_ WEFT_TEST_ 
  NCCL_COMM_PROPERTIES_INITIALIZER NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER NCCL_SIM_INFO_INITIALIZER 
  NCCL_WIN_COLL_SYMMETRIC NCCL_WIN_STRICT_ORDERING"
names=$(cd "$src" && find core plugins tools conformance -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.def' \) -print0 |
  xargs -0 grep -hoE '"(NCCL|WEFT)_[A-Z0-9_]+' | tr -d '"' | sort -u)
[ -n "$names" ] || { echo "no names found under $src"; exit 1; }
n=0
missing=""
for name in $names; do
  case " $not_settings " in *" $name "*) continue ;; esac
  n=$((n + 1))
  grep -q "\`$name\`" "$doc" || missing="$missing $name"
done
if [ -n "$missing" ]; then
  echo "docs/env.md does not list:$missing"
  echo "(a table setting: a WEFT_PARAM line in core/util/params.def, then the env-doc target;"
  echo " one read with getenv: a row of \"Read outside the table\")"
  exit 1
fi
echo "docs/env.md lists all $n variables the code names"
