#!/usr/bin/env bash
# ctest packaging_pkgconfig_<linkage>: build and run consumer/ against the
# installed prefix with nothing but pkg-config and the compiler drivers.
#   pkgconfig_consumer.sh PREFIX LIBDIR SOURCE_DIR WORK_DIR shared|static
# Environment: PKG_CONFIG, CC, CXX, ANVIL_EXTRA_FLAGS (e.g. sanitizer flags).
set -euo pipefail
prefix=$1 libdir=$2 src=$3 work=$4 linkage=$5
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
CC=${CC:-cc}
CXX=${CXX:-c++}
read -r -a extra <<<"${ANVIL_EXTRA_FLAGS:-}"

rm -rf "$work"
mkdir -p "$work"
# PKG_CONFIG_PATH comes before the system directories; the libdir check below
# makes sure the anvil.pc under test is the one used.
export PKG_CONFIG_PATH="$libdir/pkgconfig"

"$PKG_CONFIG" --exists --print-errors anvil
found=$("$PKG_CONFIG" --variable=libdir anvil)
if [[ "$(realpath "$found")" != "$(realpath "$libdir")" ]]; then
  echo "anvil.pc points at $found, expected $libdir" >&2
  exit 1
fi
if "$PKG_CONFIG" --print-requires --print-requires-private anvil | grep -qi xbyak; then
  echo "anvil.pc requires Xbyak" >&2
  exit 1
fi
echo "anvil $("$PKG_CONFIG" --modversion anvil) via $PKG_CONFIG_PATH/anvil.pc"

warn=(-Wall -Wextra -Wpedantic -Werror)
cflags=$("$PKG_CONFIG" --cflags anvil)
if [[ $linkage == shared ]]; then
  libs=$("$PKG_CONFIG" --libs anvil)
  set -x
  "$CC" -std=c99 "${warn[@]}" "${extra[@]}" $cflags "$src/consumer.c" -o "$work/consumer_c" $libs
  "$CXX" -std=c++17 "${warn[@]}" "${extra[@]}" $cflags "$src/consumer.cpp" -o "$work/consumer_cpp" $libs
  { set +x; } 2>/dev/null
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
elif [[ $linkage == static ]]; then
  # libanvil.a named first; --as-needed drops the -lanvil that --static --libs
  # also gives (it would otherwise resolve to the .so).
  libs=$("$PKG_CONFIG" --static --libs anvil)
  archive="$("$PKG_CONFIG" --variable=libdir anvil)/libanvil.a"
  set -x
  "$CC" -std=c99 "${warn[@]}" "${extra[@]}" $cflags "$src/consumer.c" -o "$work/consumer_c" \
    -Wl,--as-needed "$archive" $libs
  "$CXX" -std=c++17 "${warn[@]}" "${extra[@]}" $cflags "$src/consumer.cpp" -o "$work/consumer_cpp" \
    -Wl,--as-needed "$archive" $libs
  { set +x; } 2>/dev/null
  for exe in consumer_c consumer_cpp; do
    if readelf -d "$work/$exe" | grep -q 'NEEDED.*libanvil'; then
      echo "$exe links libanvil.so, expected the static library" >&2
      exit 1
    fi
  done
else
  echo "linkage must be shared or static, not '$linkage'" >&2
  exit 2
fi

"$work/consumer_c"
"$work/consumer_cpp"
