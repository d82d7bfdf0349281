/* embed.c: anchor of the "volua_embed" build step, whose pre-build commands compile lua/ to
 * bytecode objects (lua/embed.sh) and kernels/ with nvcc (kernels/build.sh). As a project of its
 * own it finishes before the binary links, also under make -j. */
int volua_embed_anchor;
