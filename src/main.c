/* main.c: the volua host, shaped like luajit.c: options, scripts, -e, -i, stdin and the REPL. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <luajit.h>

#include "host.h"
#include "lua_common.h"
#include "tensor.h"

static lua_State *global_L;
static const char *progname = "volua";

/* -- Ctrl-C: stop Lua at the next hook and C loops at their next poll ---- */

static int traceback(lua_State *L);

static void lstop(lua_State *L, lua_Debug *ar) {
  /* Not inside the error handler (an op stopped by Ctrl-C raises its own error, whose
   * traceback would otherwise end as "error in error handling"): the next hook will do. */
  if (ar->event == LUA_HOOKCALL && lua_getinfo(L, "f", ar)) {
    int in_handler = lua_tocfunction(L, -1) == traceback;
    lua_pop(L, 1);
    if (in_handler) return;
  }
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted");
}

static void laction(int sig) {
  /* A second Ctrl-C before the hook fires ends a script, as in lua.c; the REPL's session
   * never dies on Ctrl-C (a command stuck in C can still be ended with Ctrl-\). */
  if (!volua_repl_active) signal(sig, SIG_DFL);
  volua_interrupted = 1;
  lua_sethook(global_L, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

static int traceback(lua_State *L) {
  if (!lua_isstring(L, 1)) { /* a non-string error object */
    if (lua_isnoneornil(L, 1) || !luaL_callmeta(L, 1, "__tostring") || !lua_isstring(L, -1))
      return 1;
    lua_remove(L, 1);
  }
  luaL_traceback(L, L, lua_tostring(L, 1), 1);
  return 1;
}

int volua_docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, traceback);
  lua_insert(L, base);
  volua_interrupted = 0;
  void (*prev)(int) = signal(SIGINT, laction); /* the REPL's prompt handler, or SIG_DFL */
  int status = lua_pcall(L, narg, nres, base);
  signal(SIGINT, prev == SIG_ERR ? SIG_DFL : prev);
  lua_sethook(L, NULL, 0, 0);
  volua_interrupted = 0;
  lua_remove(L, base);
  if (status != 0) lua_gc(L, LUA_GCCOLLECT, 0); /* an error may have left big tensors behind */
  return status;
}

int volua_report(lua_State *L, int status) {
  if (status && !lua_isnil(L, -1)) {
    const char *msg = lua_tostring(L, -1);
    if (!msg) msg = "(error object is not a string)";
    fprintf(stderr, "%s: %s\n", progname, msg);
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

static void print_version(void) {
  fputs("volua 0.1 -- 3D convolutional pipelines on LuaJIT (" LUAJIT_VERSION ")\n", stdout);
}

static void print_usage(void) {
  fprintf(stderr,
    "usage: %s [options] [script [args]]\n"
    "Runs Lua scripts with the volua tensor library loaded as `vol`.\n"
    "Options:\n"
    "  -e chunk   run the string chunk\n"
    "  -l name    require library name\n"
    "  -i         enter the interactive REPL after running the script\n"
    "  -v         print the version\n"
    "  -          run standard input as a script\n"
    "  --         stop handling options\n"
    "  -h, --help show this help\n"
    "Environment: VOLUA_HISTORY (REPL history file, default ~/.volua_history),\n"
    "  VOLUA_POISON=1 (fill new GPU tensors and scratch with NaN, for tests).\n"
    "With no script and a terminal on stdin, %s starts the REPL.\n",
    progname, progname);
  fflush(stderr);
}

static int dochunk(lua_State *L, int status) {
  if (status == 0) status = volua_docall(L, 0, 0);
  return volua_report(L, status);
}

/* arg = {[-n..-1] = interpreter and options, [0] = script, [1..] = script arguments} */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  lua_createtable(L, argc - script - 1, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int handle_script(lua_State *L, char **argv, int argc, int script) {
  create_arg_table(L, argv, argc, script);
  const char *fname = argv[script];
  if (strcmp(fname, "-") == 0 && strcmp(argv[script - 1], "--") != 0) fname = NULL; /* stdin */
  int status = luaL_loadfile(L, fname); /* skips a first line starting with '#' */
  if (status == 0) {
    int narg = argc - script - 1;
    luaL_checkstack(L, narg + 3, "too many arguments to script");
    for (int i = script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
    status = volua_docall(L, narg, 0);
  }
  return volua_report(L, status);
}

typedef struct { int argc; char **argv; int status; } host_args;

static int load_volua(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushstring(L, "volua");
  int status = volua_docall(L, 1, 1);
  if (status) return volua_report(L, status);
  lua_setglobal(L, "vol");
  return 0;
}

static int pmain(lua_State *L) {
  host_args *a = lua_touserdata(L, 1);
  char **argv = a->argv;
  int argc = a->argc;
  global_L = L;
  if (argv[0] && argv[0][0]) progname = "volua";
  lua_gc(L, LUA_GCSTOP, 0);
  luaL_openlibs(L);
  lua_gc(L, LUA_GCRESTART, -1);
  /* "volua.core" is the C part; "volua" (lua/volua/init.lua) is compiled into the binary */
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_volua_core);
  lua_setfield(L, -2, "volua.core");
  lua_pop(L, 2);
  if (load_volua(L)) { a->status = 1; return 0; }

  int interactive = 0, ran = 0, i;
  for (i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (o[0] != '-' || strcmp(o, "-") == 0) break;
    if (strcmp(o, "--") == 0) { i++; break; }
    if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) { print_usage(); return 0; }
    if (strcmp(o, "-v") == 0 || strcmp(o, "--version") == 0) { print_version(); ran = 1; continue; }
    if (strcmp(o, "-i") == 0) { interactive = 1; continue; }
    if (strcmp(o, "-e") == 0 || strcmp(o, "-l") == 0) {
      const char *val = argv[i + 1];
      if (!val) {
        fprintf(stderr, "%s: '%s' needs an argument\n", progname, o);
        print_usage();
        a->status = 1;
        return 0;
      }
      i++;
      int status;
      if (o[1] == 'e') {
        status = dochunk(L, luaL_loadbuffer(L, val, strlen(val), "=(command line)"));
      } else {
        lua_getglobal(L, "require");
        lua_pushstring(L, val);
        status = volua_report(L, volua_docall(L, 1, 1));
        if (status == 0) lua_setglobal(L, val);
      }
      if (status) { a->status = 1; return 0; }
      ran = 1;
      continue;
    }
    fprintf(stderr, "%s: unrecognized option '%s'\n", progname, o);
    print_usage();
    a->status = 1;
    return 0;
  }
  if (i < argc) {
    if (handle_script(L, argv, argc, i)) { a->status = 1; return 0; }
    ran = 1;
  } else {
    create_arg_table(L, argv, argc, argc > 0 ? argc - 1 : 0);
  }
  if (interactive) volua_repl_run(L);
  else if (!ran) {
    if (isatty(0)) {
      volua_repl_run(L); /* its banner shows the version */
    } else {
      if (dochunk(L, luaL_loadfile(L, NULL))) a->status = 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "volua: cannot create the Lua state: not enough memory\n");
    return EXIT_FAILURE;
  }
  host_args a = {argc, argv, 0};
  int status = lua_cpcall(L, pmain, &a);
  volua_report(L, status);
  lua_close(L);
  return (status || a.status) ? EXIT_FAILURE : EXIT_SUCCESS;
}
