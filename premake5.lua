-- premake5.lua: volua's build. Read by Debian's premake4 as well as premake5:
--   premake4 --file=premake5.lua gmake && make -C build
-- Generated makefiles run inside build/, so command paths below are relative to it.
-- Options: --sanitize (ASan + UBSan + LSan, output in build-asan/), --no-cuda.

newoption { trigger = "sanitize", description = "build with ASan, UBSan and LSan into build-asan/" }
newoption { trigger = "no-cuda", description = "build a CPU-only binary even if nvcc is present" }

local function find_nvcc()
  if _OPTIONS["no-cuda"] then return nil end
  local p = io.popen("command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null")
  local out = p:read("*l")
  p:close()
  if out and out ~= "" then return out end
  return nil
end

local nvcc = find_nvcc()
local cuda_home = nvcc and nvcc:gsub("/bin/nvcc$", "") or nil
local out = _OPTIONS["sanitize"] and "build-asan" or "build"
local san = _OPTIONS["sanitize"] and "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" or ""

local cflags = "-std=gnu11 -O2 -g -fopenmp -Wall -Wextra -Wno-unused-parameter " .. san

solution "volua"
  configurations { "release" }
  location(out)

  -- The CPU backend is its own library so that src/cpu/conv3d.c and src/ops/conv3d.c
  -- (premake4 puts every object of a project in one folder) do not collide.
  project "volua_cpu"
    kind "StaticLib"
    language "C"
    location(out)
    targetdir(out .. "/obj")
    objdir(out .. "/obj/cpu")
    files { "src/cpu/**.c", "src/cpu/**.h" }
    includedirs { "src" }
    buildoptions { cflags }
    defines { "_GNU_SOURCE" }

  -- Lua bytecode and CUDA objects are made by scripts before anything links (see lua/embed.c).
  project "volua_embed"
    kind "StaticLib"
    language "C"
    location(out)
    targetdir(out .. "/obj")
    objdir(out .. "/obj/embed")
    files { "lua/embed.c" }
    prebuildcommands { "sh ../lua/embed.sh .. obj/lua" }
    if nvcc then
      prebuildcommands { "sh ../kernels/build.sh .. obj/kernels " .. nvcc }
    end

  project "volua"
    kind "ConsoleApp"
    language "C"
    location(out)
    targetdir(out .. "/bin")
    objdir(out .. "/obj/main")
    files { "src/*.c", "src/*.h", "src/ops/**.c", "kernels/kernels.h" }
    includedirs { "src", "/usr/include/luajit-2.1" }
    buildoptions { cflags }
    defines { "_GNU_SOURCE" }
    links { "volua_cpu", "volua_embed" }
    if symbols then symbols "On" else flags { "Symbols" } end -- keep symbols: tracebacks, sanitizers
    -- Lua files of lua/ become LuaJIT bytecode objects (luaJIT_BC_<module>), found by require.
    local kernel_lib = {}
    if nvcc then
      defines { "VOLUA_CUDA" }
      includedirs { cuda_home .. "/include" }
      kernel_lib = { "obj/kernels/libvolua_kernels.a", cuda_home .. "/lib64/libcudart_static.a", "-lstdc++ -lrt" }
    end
    linkoptions { "-Wl,-E " .. san,
                  "-Wl,--whole-archive obj/lua/libvolua_lua.a -Wl,--no-whole-archive",
                  "obj/libvolua_cpu.a" } -- again here: LIBS comes after these, past libgomp
    linkoptions(kernel_lib)
    linkoptions { "/usr/lib/x86_64-linux-gnu/libluajit-5.1.a",
                  "/usr/lib/x86_64-linux-gnu/libreadline.a /usr/lib/x86_64-linux-gnu/libtinfo.a",
                  "/usr/lib/x86_64-linux-gnu/libpng16.a /usr/lib/x86_64-linux-gnu/libz.a",
                  "-Wl,-Bstatic -lgomp -Wl,-Bdynamic",
                  "-lpthread -ldl -lm" }
