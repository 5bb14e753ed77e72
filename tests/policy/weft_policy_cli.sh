#!/bin/sh
# weft-policy as an admin runs it:
#   - a duplicate key does not hide the file's other errors (each reported, exit 1);
#   - check warns (exit 0) about a nodes cluster placed before one that sets bootstrap settings,
#     and is silent when the order is right;
#   - explain without FILE reads what init would: WEFT_POLICY (also from NCCL_CONF_FILE), else
#     /etc/weft/policy.yaml, and says which; WEFT_POLICY=none says no file is read.
# Usage: weft_policy_cli.sh WEFT_POLICY_BIN
set -eu
wp=$1
t=${TMPDIR:-/tmp}/weft-policy-cli.$$
mkdir -p "$t"
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
has() { grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "no '$2'"; }; }

cat > "$t/dup.yaml" <<'Y'
version: 1
clusters:
  - name: a
    match: {}
    name: b
    settings: {NCCL_BUFSIZE: 1}
  - {name: c, match: {}, bogus: 2}
Y
if "$wp" check "$t/dup.yaml" > "$t/out" 2> "$t/err"; then fail "check passed a file with errors"; fi
has "$t/err" "dup.yaml:5:5: duplicate key 'name' (first at 3:5)"
has "$t/err" "dup.yaml:6:16: unknown setting 'NCCL_BUFSIZE' (did you mean 'NCCL_BUFFSIZE'?)"
has "$t/err" "dup.yaml:7:26: unknown key 'bogus' in cluster"
echo "ok: a duplicate key and the other errors: $(wc -l < "$t/err") lines"

cat > "$t/order.yaml" <<'Y'
version: 1
clusters:
  - name: small
    match: {nodes: 1}
    settings: {NCCL_ALGO: Ring}
  - name: ib
    match: {hostname: "gpu-*"}
    settings: {NCCL_SOCKET_IFNAME: ib0}
Y
"$wp" check "$t/order.yaml" > "$t/out" 2> "$t/err" || fail "check failed a valid file"
has "$t/err" "order.yaml:8:16: warning: 'ib' sets NCCL_SOCKET_IFNAME, a bootstrap setting, but cluster 'small' (line 3) before it has a nodes condition"
has "$t/out" "order.yaml: ok (2 clusters; 1 warning)"
# The order the docs recommend: no warning.
{ sed -n 1,2p "$t/order.yaml"; sed -n 6,8p "$t/order.yaml"; sed -n 3,5p "$t/order.yaml"; } > "$t/good.yaml"
"$wp" check "$t/good.yaml" > "$t/out" 2> "$t/err" || fail "check failed the reordered file"
[ ! -s "$t/err" ] || { cat "$t/err"; fail "a warning on the recommended order"; }
echo "ok: check warns about a nodes cluster before bootstrap settings"

# explain without FILE.
WEFT_POLICY="$t/order.yaml" "$wp" explain --hostname gpu-7 --nodes 2 > "$t/out"
has "$t/out" "(no FILE given: $t/order.yaml, from WEFT_POLICY)"
has "$t/out" "result: cluster 'ib'"
printf 'WEFT_POLICY=%s\n' "$t/order.yaml" > "$t/nccl.conf"
env -u WEFT_POLICY NCCL_CONF_FILE="$t/nccl.conf" "$wp" explain --hostname gpu-7 --nodes 1 > "$t/out"
has "$t/out" "result: cluster 'small'"
WEFT_POLICY=none "$wp" explain > "$t/out"
has "$t/out" "WEFT_POLICY=none: init reads no policy file"
env -u WEFT_POLICY -u NCCL_CONF_FILE HOME="$t" "$wp" explain > "$t/out" 2>&1 || true
if [ -e /etc/weft/policy.yaml ]; then
  has "$t/out" "(no FILE given: /etc/weft/policy.yaml, from the default path)"
else
  has "$t/out" "WEFT_POLICY is unset and /etc/weft/policy.yaml does not exist"
fi
echo "ok: explain without FILE reads WEFT_POLICY (environment or nccl.conf), then the default"
