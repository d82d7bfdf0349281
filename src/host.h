/* host.h: what the host (main.c) shares with the REPL (repl.c). */
#ifndef VOLUA_HOST_H
#define VOLUA_HOST_H

#include <signal.h>
#include <lua.h>

/* Runs the function on top of the stack (with narg arguments below it) under a traceback
 * handler and the Ctrl-C handler; leaves nres results (LUA_MULTRET for all) or an error message. */
int volua_docall(lua_State *L, int narg, int nres);
/* Prints the error message on top of the stack to stderr as "volua: msg" and pops it. */
int volua_report(lua_State *L, int status);
/* The interactive loop (repl.c): reads, evaluates and prints until end of input. */
void volua_repl_run(lua_State *L);
/* Non-zero while the REPL runs (repl.c): Ctrl-C then never ends the process. */
extern volatile sig_atomic_t volua_repl_active;

#endif
