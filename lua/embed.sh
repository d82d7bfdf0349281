#!/bin/sh
# embed.sh ROOT OUTDIR: compiles every lua/**/*.lua to a LuaJIT bytecode object (symbol
# luaJIT_BC_<module>, which require finds in the executable) and archives them.
# lua/volua/init.lua is module "volua", lua/volua/nn.lua is "volua.nn".
set -e
ROOT=$1; OUT=$2
mkdir -p "$OUT"
changed=0
for f in $(cd "$ROOT/lua" && find . -name '*.lua' | sort); do
  mod=$(echo "$f" | sed -e 's|^\./||' -e 's|\.lua$||' -e 's|/init$||' -e 's|/|.|g')
  obj="$OUT/$(echo "$mod" | tr . _).o"
  if [ ! -f "$obj" ] || [ "$ROOT/lua/$f" -nt "$obj" ]; then
    luajit -b -g -n "$mod" "$ROOT/lua/$f" "$obj"
    changed=1
  fi
done
if [ $changed = 1 ] || [ ! -f "$OUT/libvolua_lua.a" ]; then
  rm -f "$OUT/libvolua_lua.a"
  ar rcs "$OUT/libvolua_lua.a" "$OUT"/*.o
  rm -f bin/volua bin/volua.exe  # relink: the archive changed (cwd is the build folder)
fi
