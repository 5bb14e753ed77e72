#!/bin/sh
# weft-conformance's properties test on the socket plugin over a PCI network interface: its
# pciPath must be the interface's PCI device (the test fails a NULL one). Skipped (77) on a host
# whose interfaces are all virtual (containers: veth).
#   socket_pci_path.sh WEFT_CONFORMANCE PLUGIN
set -eu
conf=$1 plugin=$2
nic=""
for d in /sys/class/net/*; do
  [ -e "$d/device" ] || continue
  n=$(basename "$d")
  # up, with an IPv4 address (the plugin's devices)
  if ip -4 -o addr show dev "$n" 2>/dev/null | grep -q inet; then nic=$n; break; fi
done
[ -n "$nic" ] || { echo "skip: no PCI network interface with an IPv4 address here"; exit 77; }
out=$(NCCL_SOCKET_IFNAME="=$nic" NCCL_DEBUG=WARN "$conf" net "$plugin" \
  --filter 'net_properties_are_sane*' 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -q "^PASS net_properties_are_sane_for_the_version" || { echo "$out"; exit 1; }
echo "ok: $nic's pciPath accepted ($(readlink -f "/sys/class/net/$nic/device"))"
