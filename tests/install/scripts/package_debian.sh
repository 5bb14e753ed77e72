#!/bin/sh
# The Debian packages, built the Debian way and checked as an admin would (test package_debian,
# label install). Nothing is installed on the host.
#   package_debian.sh SRC WORK
# 1. SRC's files (git's list when SRC is a checkout, else SRC less build trees) copied into
#    WORK/src; `dpkg-buildpackage -us -uc -b` there, DEB_BUILD_OPTIONS=nocuda (host mode only:
#    CI has no nvcc to spare time on). Skipped (77) when the build dependencies are missing.
# 2. lintian -I --pedantic on the .changes: any E: or W: line fails.
# 3. Each .deb unpacked with dpkg -x into WORK/root; the layout checked file by file against
#    what debian/*.install promise; every ELF file hardened (BIND_NOW, GNU_RELRO, the stack
#    protector, no RPATH) and free of the build directory's path; each tool's --version prints
#    weft's version; each man page renders with man -l; the example policies pass the installed
#    weft-policy check.
# 4. Control fields: Depends from shlibs (libyaml-0-2 for the env plugin, no libstdc++), a
#    symbols file and no maintainer script calling ldconfig, -dbgsym packages, a real Maintainer.
set -eu
SRC=$1
WORK=$2
fail() { echo "package_debian: FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"
mkdir -p "$WORK/src"
if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$SRC" && git ls-files -co --exclude-standard -z | xargs -0 tar -cf - --no-recursion) |
    tar -xf - -C "$WORK/src"
else
  (cd "$SRC" && tar -cf - --exclude=./build --exclude='./build-*' --exclude='./obj-*' .) |
    tar -xf - -C "$WORK/src"
fi
cd "$WORK/src"
if ! missing=$(dpkg-checkbuilddeps 2>&1); then
  echo "package_debian: SKIP: $missing (scripts/install-deps installs them)"
  exit 77
fi

# ---- 1. build -------------------------------------------------------------------------------
t0=$(date +%s)
jobs=$(nproc 2>/dev/null || echo 2)
if ! DEB_BUILD_OPTIONS="nocuda parallel=$jobs" dpkg-buildpackage -us -uc -b >../build.log 2>&1; then
  tail -40 ../build.log
  fail "dpkg-buildpackage failed (log: $WORK/build.log)"
fi
t1=$(date +%s)
echo "package_debian: dpkg-buildpackage took $((t1 - t0)) s"
cd "$WORK"
version=$(dpkg-parsechangelog -l src/debian/changelog -S Version)
upstream=${version%%-*}
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
pkgs="libweft0 weft-plugins weft-plugin-ib weft-plugin-ofi weft-dev weft-tools"
for p in $pkgs; do
  [ -f "${p}_${version}_${arch}.deb" ] || fail "${p}_${version}_${arch}.deb was not built"
done
for p in libweft0 weft-plugins weft-plugin-ib weft-plugin-ofi weft-tools; do
  [ -f "${p}-dbgsym_${version}_${arch}.deb" ] || fail "no ${p}-dbgsym package (debug info stripped away?)"
done

# ---- 2. lintian -----------------------------------------------------------------------------
lintian -I --pedantic "weft_${version}_${arch}.changes" >lintian.txt 2>&1 || true
cat lintian.txt
if grep -q '^[EW]: ' lintian.txt; then
  fail "lintian reports errors or warnings (above)"
fi
t2=$(date +%s)
echo "package_debian: lintian took $((t2 - t1)) s"

# ---- 3. layout ------------------------------------------------------------------------------
root=$WORK/root
L=usr/lib/$multiarch
for p in $pkgs; do
  dpkg -x "${p}_${version}_${arch}.deb" "$root"
  dpkg-deb -c "${p}_${version}_${arch}.deb" | awk '{print $6}' | sed 's|^\./||; s|/$||' \
    >"contents.$p"
done
need() { # need PACKAGE PATH...: each PATH is in PACKAGE
  p=$1
  shift
  for f in "$@"; do
    grep -qx "$f" "contents.$p" || fail "$p lacks /$f"
  done
}
need libweft0 "$L/libweft.so.0" "$L/libweft.so.$upstream" "$L/weft/libnccl.so.2" \
  "$L/weft/00-weft-nccl.conf" usr/share/doc/libweft0/copyright
need weft-plugins "$L/libnccl-net-weft-socket.so" "$L/libnccl-tuner-weft.so" \
  "$L/libnccl-env-weft.so" "$L/libnccl-profiler-weft-trace.so"
need weft-plugin-ib "$L/libnccl-net-weft-ib.so"
need weft-plugin-ofi "$L/libnccl-net-weft-ofi.so"
need weft-dev usr/include/weft/nccl.h usr/include/weft/weft.h usr/include/weft/nccl_device.h \
  "$L/libweft.so" "$L/weft/libnccl.so" "$L/libweft-net-export.a" \
  "$L/cmake/weft/weftConfig.cmake" "$L/pkgconfig/weft.pc" \
  usr/share/doc/weft-dev/examples/net-plugin/CMakeLists.txt
tools="weft-perf weft-conformance weft-policy weft-ras weft-trace-merge"
for t in $tools; do
  need weft-tools "usr/bin/$t" "usr/share/man/man1/$t.1.gz"
done
for y in src/examples/policies/*.yaml; do
  need weft-tools "usr/share/weft/policies/$(basename "$y")"
done
need weft-tools usr/share/doc/weft-tools/install.md.gz
# Nothing else: the libraries only in the library package, no default-name plugin, no
# duplicate of the license, nothing in /usr/share/weft of an architecture package but policies.
for p in $pkgs; do
  if [ "$p" != libweft0 ] && grep -q "libweft\.so\.\|libnccl\.so\.2" "contents.$p"; then
    fail "$p holds a runtime library: $(grep 'libweft\.so\.\|libnccl\.so\.2' "contents.$p")"
  fi
done
if grep -hq '/libnccl-\(net\|tuner\|env\|profiler\)\.so$' contents.*; then
  fail "a default-name plugin is packaged"
fi
grep -q '/LICENSE$' contents.weft-tools && fail "weft-tools duplicates the license (debian/copyright)"

# Every ELF file: hardened, no RPATH, no build path.
nelf=0
find "$root" -type f >files.txt
while read -r f; do
  [ "$(head -c4 "$f" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || continue
  case $f in *.a) continue ;; esac
  rel=${f#"$root"/}
  dyn=$(readelf -d "$f")
  echo "$dyn" | grep -q 'BIND_NOW\|FLAGS.*NOW' || fail "$rel: not linked with -z now"
  readelf -lW "$f" | grep -q GNU_RELRO || fail "$rel: no RELRO"
  echo "$dyn" | grep -q 'RPATH\|RUNPATH' && fail "$rel: carries an RPATH/RUNPATH"
  readelf -sW --dyn-syms "$f" | grep -q '__stack_chk_fail' ||
    fail "$rel: not built with the stack protector"
  if grep -q -F -a "$WORK/src" "$f"; then
    fail "$rel names the build directory $WORK/src (-ffile-prefix-map not applied)"
  fi
  nelf=$((nelf + 1))
done <files.txt
[ "$nelf" -ge 10 ] || fail "only $nelf ELF files found in the packages"
echo "package_debian: $nelf ELF files hardened, none names the build directory"
# Fortify: the library and the tools call the checked string functions.
for f in "$L/libweft.so.$upstream" usr/bin/weft-perf usr/bin/weft-policy; do
  readelf -sW --dyn-syms "$root/$f" | grep -q '__[a-z]*_chk@' ||
    fail "/$f: no _FORTIFY_SOURCE checked call"
done

# The tools: --version, and the man pages render.
export LD_LIBRARY_PATH="$root/$L"
for t in $tools; do
  if [ "$t" = weft-trace-merge ]; then
    out=$(python3 "$root/usr/bin/$t" --version)
  else
    out=$("$root/usr/bin/$t" --version)
  fi
  echo "$out" | grep -q "(weft) $upstream\$" || fail "$t --version printed '$out', want weft $upstream"
  err=$(LC_ALL=C MANWIDTH=80 man -l "$root/usr/share/man/man1/$t.1.gz" 2>&1 >man.$t.txt) ||
    fail "man -l $t.1.gz failed: $err"
  [ -z "$err" ] || fail "man -l $t.1.gz warns: $err"
  grep -q -- '--version' "man.$t.txt" || fail "$t.1 does not list --version (help2man input?)"
  if grep -q "obj-\|$WORK\|?" "man.$t.txt"; then
    fail "$t.1 names a build path or holds characters that do not render: $(grep "obj-\|$WORK\|?" "man.$t.txt")"
  fi
done
"$root/usr/bin/weft-policy" check "$root"/usr/share/weft/policies/*.yaml ||
  fail "the installed example policies do not pass weft-policy check"
unset LD_LIBRARY_PATH

# ---- 4. control fields ----------------------------------------------------------------------
field() { dpkg-deb -f "${1}_${version}_${arch}.deb" "$2"; }
for p in $pkgs; do
  case $(field "$p" Maintainer) in *@localhost* | "") fail "$p: Maintainer '$(field "$p" Maintainer)'" ;; esac
  [ -n "$(field "$p" Homepage)" ] || fail "$p: no Homepage"
  [ -n "$(field "$p" Multi-Arch)" ] || fail "$p: no Multi-Arch"
  dpkg-deb -e "${p}_${version}_${arch}.deb" "ctrl.$p"
  if grep -qs ldconfig "ctrl.$p/postinst" "ctrl.$p/postrm"; then
    fail "$p: a maintainer script calls ldconfig"
  fi
  # Installed-Size (KiB) within 10% + 8 KiB of what the files take (dpkg counts 1 KiB blocks).
  size=$(field "$p" Installed-Size)
  real=$(dpkg-deb --fsys-tarfile "${p}_${version}_${arch}.deb" | tar -tvf - |
    awk '{s += int(($3 + 1023) / 1024)} END {print s}')
  [ "$size" -le $((real + real / 10 + 8)) ] && [ "$size" -ge $((real - real / 10 - 8)) ] ||
    fail "$p: Installed-Size $size KiB, files take $real KiB"
done
[ -f ctrl.libweft0/symbols ] || fail "libweft0 has no symbols file"
[ ! -f ctrl.libweft0/shlibs ] || grep -q '^libweft 0 libweft0' ctrl.libweft0/shlibs ||
  fail "libweft0 shlibs: $(cat ctrl.libweft0/shlibs)"
grep -q "activate-noawait ldconfig" ctrl.libweft0/triggers || fail "libweft0: no ldconfig trigger"
grep -q "activate-noawait ldconfig" ctrl.weft-plugins/triggers ||
  fail "weft-plugins: no ldconfig trigger (stock NCCL dlopens the plugins by name)"
field weft-plugins Depends | grep -q libyaml-0-2 ||
  fail "weft-plugins does not depend on libyaml-0-2 (env plugin linked statically?)"
field weft-plugin-ofi Depends | grep -q libfabric || fail "weft-plugin-ofi: no libfabric Depends"
field weft-tools Depends | grep -q "libweft0 (= $version)" || fail "weft-tools: Depends on libweft0?"
for p in $pkgs; do
  if field "$p" Depends | grep -q 'libstdc++\|libgcc-s'; then
    fail "$p depends on $(field "$p" Depends): a host-mode build needs neither libstdc++ nor libgcc_s"
  fi
done
for p in $pkgs; do
  echo "package_debian: $p: Depends: $(field "$p" Depends)"
done
echo "package_debian: ok ($(($(date +%s) - t0)) s)"
