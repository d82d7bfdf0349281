/* repl.c: the terminal half of the REPL: line reading (GNU readline's callback interface on a
 * terminal, plain lines on a pipe), Ctrl-C at the prompt, history and the completion hook.
 * Compiling, running, printing and completing are done in Lua by lua/volua/repl.lua. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>
#include <readline/readline.h>
#include <readline/history.h>

#include "host.h"

#define HISTORY_MAX 1000

volatile sig_atomic_t volua_repl_active = 0;

static lua_State *repl_L;
static int repl_ref = LUA_NOREF; /* the volua.repl module table, in the registry */
static int on_tty;
static char *history_path;

static volatile sig_atomic_t got_sigint, got_sigwinch;

/* -- signals at the prompt ------------------------------------------------------------ */

static void on_sigint(int sig) { (void)sig; got_sigint = 1; }
static void on_sigwinch(int sig) { (void)sig; got_sigwinch = 1; }

/* SIGINT without SA_RESTART, so that a blocked read returns EINTR and the loop sees the flag
 * (pselect returns EINTR either way).
 * volua_docall (main.c) swaps in its own handler while a command runs and restores this one. */
static void install_prompt_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  if (on_tty) {
    sa.sa_handler = on_sigwinch;
    sa.sa_flags = SA_RESTART; /* a resize must not break a read in a running command */
    sigaction(SIGWINCH, &sa, NULL);
  }
}

/* -- calling into lua/volua/repl.lua ------------------------------------------------- */

/* Pushes repl.<name> (a function) or returns 0 when the module lacks it. */
static int push_repl_fn(lua_State *L, const char *name) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, repl_ref);
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
  if (lua_isfunction(L, -1)) return 1;
  lua_pop(L, 1);
  return 0;
}

/* Shows the error on top of the stack through repl.show_error (trimmed traceback, "interrupted"),
 * falling back to the host's "volua: msg" if that fails too; pops it. */
static void show_error(lua_State *L) {
  if (push_repl_fn(L, "show_error")) {
    lua_insert(L, -2);
    if (lua_pcall(L, 1, 0, 0) == 0) return;
  }
  volua_report(L, 1);
}

static int l_now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + 1e-9 * (lua_Number)ts.tv_nsec);
  return 1;
}

static int l_screen_width(lua_State *L) {
  int rows = 0, cols = 0;
  if (on_tty) rl_get_screen_size(&rows, &cols);
  lua_pushinteger(L, cols > 0 ? cols : 80);
  return 1;
}

/* Loads volua.repl and gives it what only C knows; 0 on success. */
static int open_repl_module(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushstring(L, "volua.repl");
  if (volua_docall(L, 1, 1)) { volua_report(L, 1); return 1; }
  lua_pushcfunction(L, l_now);
  lua_setfield(L, -2, "now");
  lua_pushcfunction(L, l_screen_width);
  lua_setfield(L, -2, "screen_width");
  lua_pushboolean(L, on_tty);
  lua_setfield(L, -2, "interactive");
  const char *term = getenv("TERM");
  lua_pushboolean(L, on_tty && isatty(1) && term && strcmp(term, "dumb") != 0);
  lua_setfield(L, -2, "color");
  repl_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

/* -- tab completion: the candidates come from repl.complete(line_before_cursor, word) --- */

static char **candidates;
static size_t n_candidates, next_candidate;

static void free_candidates(void) {
  for (size_t i = 0; i < n_candidates; i++) free(candidates[i]);
  free(candidates);
  candidates = NULL;
  n_candidates = next_candidate = 0;
}

static char *candidate_generator(const char *text, int state) {
  (void)text; /* repl.complete already filtered by it */
  if (state == 0) next_candidate = 0;
  if (next_candidate >= n_candidates) return NULL;
  return strdup(candidates[next_candidate++]);
}

static char **complete(const char *text, int start, int end) {
  (void)start;
  lua_State *L = repl_L;
  int top = lua_gettop(L);
  rl_attempted_completion_over = 1; /* never fall back to file names */
  free_candidates();
  if (text[0] == 0) {
    int blank = 1;
    for (int i = 0; i < end && blank; i++) blank = rl_line_buffer[i] == ' ' || rl_line_buffer[i] == '\t';
    if (blank) { rl_insert_text("  "); return NULL; } /* Tab at the start of a line indents */
  }
  if (!push_repl_fn(L, "complete")) return NULL;
  lua_pushlstring(L, rl_line_buffer, (size_t)end);
  lua_pushstring(L, text);
  if (lua_pcall(L, 2, 2, 0) != 0 || !lua_istable(L, -2)) { lua_settop(L, top); return NULL; }
  size_t n = lua_objlen(L, -2);
  candidates = calloc(n ? n : 1, sizeof *candidates);
  for (size_t i = 0; candidates && i < n; i++) {
    lua_rawgeti(L, -2, (int)i + 1);
    const char *s = lua_tostring(L, -1);
    if (s && (candidates[n_candidates] = strdup(s))) n_candidates++;
    lua_pop(L, 1);
  }
  const char *append = lua_tostring(L, -1);
  rl_completion_append_character = append && append[0] ? append[0] : '\0';
  lua_settop(L, top);
  if (n_candidates == 0) return NULL;
  return rl_completion_matches(text, candidate_generator);
}

/* Lists matches by their last name only ("conv3d", not "vol.conv3d"), as IPython does. */
static void display_matches(char **matches, int num, int max_length) {
  (void)max_length;
  size_t cut = 0;
  const char *first = matches[1] ? matches[1] : matches[0];
  for (const char *p = first; *p; p++)
    if (*p == '.' || *p == ':') cut = (size_t)(p - first) + 1;
  char **shown = calloc((size_t)num + 2, sizeof *shown);
  if (!shown) return;
  int longest = 0;
  shown[0] = matches[0];
  for (int i = 1; i <= num; i++) {
    shown[i] = strlen(matches[i]) >= cut ? matches[i] + cut : matches[i];
    int len = (int)strlen(shown[i]);
    if (len > longest) longest = len;
  }
  rl_display_match_list(shown, num, longest);
  rl_forced_update_display();
  free(shown);
}

/* -- reading a line ------------------------------------------------------------------- */

static char interrupted_mark; /* read_line's answer to Ctrl-C at the prompt */
#define LINE_INTERRUPTED (&interrupted_mark)

static char *tty_line;
static int tty_line_done;

static void on_line(char *line) {
  tty_line = line;
  tty_line_done = 1;
  rl_callback_handler_remove(); /* no prompt redisplayed while the command runs */
}

/* GNU readline's callback interface under a pselect loop: SIGINT is blocked except while
 * waiting, so a Ctrl-C can never slip in between the check and the wait. */
static char *read_line_tty(const char *prompt) {
  sigset_t block, orig;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGWINCH);
  sigprocmask(SIG_BLOCK, &block, &orig);
  got_sigint = 0;
  tty_line = NULL;
  tty_line_done = 0;
  rl_callback_handler_install(prompt, on_line);
  char *result = NULL;
  while (!tty_line_done) {
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(fileno(rl_instream), &fds);
    int r = pselect(fileno(rl_instream) + 1, &fds, NULL, NULL, NULL, &orig);
    if (got_sigwinch) { got_sigwinch = 0; rl_resize_terminal(); }
    if (got_sigint) {
      got_sigint = 0;
      rl_point = rl_end; /* leave the abandoned line on the screen, marked as bash does */
      rl_redisplay();
      fputs("^C\n", rl_outstream);
      fflush(rl_outstream);
      rl_free_line_state();
      rl_callback_sigcleanup();
      rl_callback_handler_remove();
      result = LINE_INTERRUPTED;
      break;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      rl_callback_handler_remove();
      break; /* the terminal went away: treat as end of input */
    }
    if (r > 0) rl_callback_read_char();
  }
  if (tty_line_done) result = tty_line;
  sigprocmask(SIG_SETMASK, &orig, NULL);
  return result;
}

/* A pipe or a file: no prompt, no echo; Ctrl-C (a SIGINT sent to us) drops the pending input. */
static char *read_line_plain(void) {
  char *line = NULL;
  size_t cap = 0;
  for (;;) {
    errno = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n >= 0) {
      if (n > 0 && line[n - 1] == '\n') line[n - 1] = 0;
      return line;
    }
    if (errno == EINTR && got_sigint) {
      got_sigint = 0;
      clearerr(stdin);
      free(line);
      return LINE_INTERRUPTED;
    }
    free(line);
    return NULL;
  }
}

static char *read_line(const char *prompt) {
  fflush(stdout);
  fflush(stderr);
  return on_tty ? read_line_tty(prompt) : read_line_plain();
}

/* -- history ---------------------------------------------------------------------------- */

static void history_open(void) {
  const char *path = getenv("VOLUA_HISTORY");
  const char *home = getenv("HOME");
  if (path && !path[0]) return; /* VOLUA_HISTORY= (empty) turns history off */
  if (path) {
    history_path = strdup(path);
  } else if (home && home[0]) {
    size_t len = strlen(home) + sizeof "/.volua_history";
    history_path = malloc(len);
    if (history_path) snprintf(history_path, len, "%s/.volua_history", home);
  }
  stifle_history(HISTORY_MAX);
  if (!history_path) return;
  if (read_history(history_path) != 0) write_history(history_path); /* create it (mode 0600) */
}

/* Appends at once, so a killed session or a second one open beside it loses nothing. */
static void history_add(const char *line) {
  if (!line[0] || strspn(line, " \t") == strlen(line)) return;
  HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
  if (last && strcmp(last->line, line) == 0) return;
  add_history(line);
  if (history_path) append_history(1, history_path);
}

static void history_close(void) {
  if (history_path) history_truncate_file(history_path, HISTORY_MAX);
  free(history_path);
  history_path = NULL;
}

/* -- the loop ---------------------------------------------------------------------------- */

/* Runs repl.<name>(arg) under volua_docall (the Ctrl-C hook, a traceback); returns its
 * boolean result, or 0 after showing an error. */
static int call_repl(lua_State *L, const char *name, const char *arg) {
  int top = lua_gettop(L);
  if (!push_repl_fn(L, name)) return 0;
  int narg = 0;
  if (arg) { lua_pushstring(L, arg); narg = 1; }
  int status = volua_docall(L, narg, 1);
  int result = 0;
  if (status) show_error(L);
  else result = lua_toboolean(L, -1);
  lua_settop(L, top);
  return result;
}

static void setup_readline(void) {
  rl_readline_name = "volua";
  rl_catch_signals = 0;  /* our handlers: readline's own would re-raise SIGINT and end us */
  rl_catch_sigwinch = 0;
  rl_attempted_completion_function = complete;
  rl_completion_display_matches_hook = display_matches;
  /* '.' and ':' are not word breaks, so "vol.conv" and "x:res" reach the completer whole */
  rl_completer_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%^~#[]}";
  rl_completer_quote_characters = "";
}

void volua_repl_run(lua_State *L) {
  repl_L = L;
  on_tty = isatty(0);
  if (open_repl_module(L)) return;
  volua_repl_active = 1;
  if (on_tty) {
    setup_readline();
    history_open();
  }
  call_repl(L, "start", NULL); /* banner, the `help` global */

  char *buffer = NULL; /* a command being continued over several lines */
  size_t buffer_len = 0;
  for (;;) {
    install_prompt_handlers(); /* volua_docall put ours back through signal(), with SA_RESTART */
    char *line = read_line(buffer ? ">> " : "> ");
    if (line == LINE_INTERRUPTED) {
      free(buffer);
      buffer = NULL;
      buffer_len = 0;
      continue;
    }
    if (!line) {
      if (buffer && !on_tty) call_repl(L, "finish_incomplete", buffer); /* a piped chunk cut short */
      if (buffer && on_tty) { /* Ctrl-D at ">> " abandons the command, as Ctrl-C would */
        fputs("\n", stdout);
        free(buffer);
        buffer = NULL;
        buffer_len = 0;
        continue;
      }
      break;
    }
    if (on_tty) history_add(line);
    size_t len = strlen(line);
    char *grown = realloc(buffer, buffer_len + len + 2);
    if (!grown) { free(line); break; }
    if (buffer) grown[buffer_len++] = '\n';
    memcpy(grown + buffer_len, line, len + 1);
    buffer = grown;
    buffer_len += len;
    free(line);
    if (call_repl(L, "eval", buffer)) continue; /* incomplete: read more with ">> " */
    free(buffer);
    buffer = NULL;
    buffer_len = 0;
  }
  free(buffer);
  free_candidates();
  if (on_tty) {
    history_close();
    fputs("\n", stdout);
  }
  fflush(stdout);
  volua_repl_active = 0;
  signal(SIGINT, SIG_DFL);
  if (repl_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, repl_ref);
  repl_ref = LUA_NOREF;
}
