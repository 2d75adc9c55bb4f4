// A native SQLite writer thread for Node-API (issue 16, item 4): a measured
// prototype, not a shipped feature (docs/decisions/0044 says why).
//
// One writer thread owns one SQLite connection. The calling thread submits
// groups of operations; each operation is a program of prepared statements
// (by index into the SQL list given at open) with their parameters and one
// check per statement. The writer takes every group waiting (up to
// `mergedOperationsMax` operations) into one transaction, a SAVEPOINT per
// operation when there is more than one (as host/store/sqlite/transaction.ts
// does), commits, and answers each group through a thread-safe function:
// no second V8 isolate, no JavaScript on the writer thread.
//
// A group crosses as bytes, in one of two encodings (the bench measures
// both):
//
//   JSON text:  [[[stmt, check, param...], ...], ...]   (operations → steps)
//               params are strings, numbers or null
//   binary:     u32 operations; per operation u16 steps; per step u16 stmt,
//               u8 check, u8 params; per param u8 tag (0 null, 2 f64 number,
//               3 text: u32 length + UTF-8 bytes); little-endian
//
// Numbers that are integers bind as 64-bit integers, others as doubles.
// Each is decoded while it executes (in place, no intermediate structure).
//
// Checks: 0 none; 1 the statement changed exactly one row; 2 it returned no
// row; 3 it returned a row. A failed check (or an SQLite error) rolls the
// operation back to its savepoint and skips its remaining statements; its
// result is the index of the failed statement (or -2 with SQLite's message).
// A transaction that cannot begin or commit fails every operation in it
// (-3, with the message).
//
// JavaScript API (writer.node):
//   open(path, synchronous "FULL"|"NORMAL", cacheKib, sql[], onSettled) → handle
//       onSettled(group, Int32Array results, messages (string|undefined)[] | undefined)
//       results[i]: -1 ok, k ≥ 0 check k failed, -2 SQLite error, -3 transaction failed
//   submit(handle, group, count, payload Buffer|string)   Buffer → binary, string → JSON
//   ref(handle, boolean)    whether settled groups keep the event loop alive
//   statistics(handle) → [transactions, operations, busy seconds]
//   close(handle)           waits for the writer to finish what it holds

#define NAPI_VERSION 8
#include <node_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sqlite3.h"

#define RESULT_OK (-1)
#define RESULT_SQLITE (-2)
#define RESULT_TRANSACTION (-3)
#define CHECK_NONE 0
#define CHECK_ONE_CHANGE 1
#define CHECK_NO_ROW 2
#define CHECK_ROW 3
#define TAG_NULL 0
#define TAG_NUMBER 2
#define TAG_TEXT 3

static const unsigned mergedOperationsMax = 1024;

typedef struct Job {
  struct Job *next;
  uint32_t group;
  uint32_t count;
  int json;
  char *bytes; // NUL-terminated copy of the payload
  size_t length;
  int32_t *results;
  char **messages; // NULL, or count entries (NULL where none)
} Job;

enum { BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, ROLLBACK_TO, CONTROLS };
static const char *controlSql[CONTROLS] = {
  "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK", "SAVEPOINT operation", "RELEASE operation", "ROLLBACK TO operation",
};

typedef struct {
  sqlite3 *db;
  sqlite3_stmt *control[CONTROLS];
  char **sql;
  sqlite3_stmt **statements;
  uint32_t statementCount;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  Job *head, *tail;
  int closing;
  int closed;
  napi_threadsafe_function settled;
  // statistics, written by the writer only
  double transactions, operations, busySeconds;
} Writer;

// -- decoding ------------------------------------------------------------------

typedef struct {
  char *p, *end;
  int json;
  int bad;
} Cursor;

static void spaces(Cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

static int take(Cursor *c, char expected) {
  spaces(c);
  if (c->p < c->end && *c->p == expected) { c->p++; return 1; }
  return 0;
}

static unsigned hex4(const char *p, int *ok) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char h = p[i];
    v <<= 4;
    if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
    else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
    else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
    else *ok = 0;
  }
  return v;
}

static char *utf8(char *w, unsigned cp) {
  if (cp < 0x80) *w++ = (char)cp;
  else if (cp < 0x800) { *w++ = (char)(0xC0 | (cp >> 6)); *w++ = (char)(0x80 | (cp & 0x3F)); }
  else if (cp < 0x10000) { *w++ = (char)(0xE0 | (cp >> 12)); *w++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *w++ = (char)(0x80 | (cp & 0x3F)); }
  else { *w++ = (char)(0xF0 | (cp >> 18)); *w++ = (char)(0x80 | ((cp >> 12) & 0x3F)); *w++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *w++ = (char)(0x80 | (cp & 0x3F)); }
  return w;
}

typedef struct {
  int tag;
  double number;
  const char *text;
  uint32_t length;
} Value;

// A JSON string, unescaped in place (never longer than its escaped form).
static int jsonString(Cursor *c, Value *v) {
  char *w = c->p, *start = c->p;
  while (c->p < c->end) {
    char ch = *c->p++;
    if (ch == '"') { v->tag = TAG_TEXT; v->text = start; v->length = (uint32_t)(w - start); return 1; }
    if (ch != '\\') { *w++ = ch; continue; }
    if (c->p >= c->end) return 0;
    ch = *c->p++;
    switch (ch) {
      case '"': *w++ = '"'; break;
      case '\\': *w++ = '\\'; break;
      case '/': *w++ = '/'; break;
      case 'b': *w++ = '\b'; break;
      case 'f': *w++ = '\f'; break;
      case 'n': *w++ = '\n'; break;
      case 'r': *w++ = '\r'; break;
      case 't': *w++ = '\t'; break;
      case 'u': {
        int ok = 1;
        if (c->end - c->p < 4) return 0;
        unsigned cp = hex4(c->p, &ok);
        c->p += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u') {
          unsigned low = hex4(c->p + 2, &ok);
          if (low >= 0xDC00 && low < 0xE000) { cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00); c->p += 6; }
        }
        if (!ok) return 0;
        w = utf8(w, cp);
        break;
      }
      default: return 0;
    }
  }
  return 0;
}

static int readValue(Cursor *c, Value *v) {
  if (c->json) {
    spaces(c);
    if (c->p >= c->end) return 0;
    if (*c->p == '"') { c->p++; return jsonString(c, v); }
    if (*c->p == 'n') {
      if (c->end - c->p < 4 || memcmp(c->p, "null", 4) != 0) return 0;
      c->p += 4; v->tag = TAG_NULL; return 1;
    }
    char *after;
    v->number = strtod(c->p, &after); // the payload is NUL-terminated
    if (after == c->p) return 0;
    c->p = after; v->tag = TAG_NUMBER; return 1;
  }
  if (c->end - c->p < 1) return 0;
  v->tag = (uint8_t)*c->p++;
  if (v->tag == TAG_NULL) return 1;
  if (v->tag == TAG_NUMBER) {
    if (c->end - c->p < 8) return 0;
    memcpy(&v->number, c->p, 8); c->p += 8; return 1;
  }
  if (v->tag == TAG_TEXT) {
    if (c->end - c->p < 4) return 0;
    memcpy(&v->length, c->p, 4); c->p += 4;
    if ((size_t)(c->end - c->p) < v->length) return 0;
    v->text = c->p; c->p += v->length; return 1;
  }
  return 0;
}

static unsigned readUnsigned(Cursor *c, int bytes) {
  if (c->json) {
    Value v;
    if (!readValue(c, &v) || v.tag != TAG_NUMBER) { c->bad = 1; return 0; }
    return (unsigned)v.number;
  }
  if (c->end - c->p < bytes) { c->bad = 1; return 0; }
  unsigned v = 0;
  for (int i = 0; i < bytes; i++) v |= (unsigned)(uint8_t)c->p[i] << (8 * i);
  c->p += bytes;
  return v;
}

// -- executing -----------------------------------------------------------------

static int runControl(Writer *w, int which) {
  sqlite3_stmt *s = w->control[which];
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static sqlite3_stmt *statement(Writer *w, unsigned index) {
  if (index >= w->statementCount) return NULL;
  if (w->statements[index] == NULL) {
    sqlite3_prepare_v3(w->db, w->sql[index], -1, SQLITE_PREPARE_PERSISTENT, &w->statements[index], NULL);
  }
  return w->statements[index];
}

static char *copyText(const char *text) {
  size_t n = strlen(text);
  char *copy = malloc(n + 1);
  memcpy(copy, text, n + 1);
  return copy;
}

static void setMessage(Job *job, uint32_t index, const char *text) {
  if (job->messages == NULL) job->messages = calloc(job->count, sizeof(char *));
  free(job->messages[index]);
  job->messages[index] = copyText(text);
}

// Runs one operation's steps; returns RESULT_OK, the failed check's index,
// or RESULT_SQLITE (message set). Always consumes the operation's encoding.
static int32_t runOperation(Writer *w, Cursor *c, Job *job, uint32_t index) {
  int32_t result = RESULT_OK;
  if (c->json && !take(c, '[')) { c->bad = 1; return RESULT_SQLITE; }
  unsigned steps = c->json ? 0xFFFFFFFFu : readUnsigned(c, 2);
  for (unsigned k = 0; k < steps && !c->bad; k++) {
    if (c->json) {
      if (k > 0 && !take(c, ',')) break;
      if (!take(c, '[')) { if (k == 0) break; c->bad = 1; break; }
    }
    unsigned stmtIndex = readUnsigned(c, 2);
    if (c->json && !take(c, ',')) c->bad = 1;
    unsigned check = readUnsigned(c, 1);
    unsigned params = c->json ? 0xFFFFu : readUnsigned(c, 1);
    if (c->bad) break;
    sqlite3_stmt *s = result == RESULT_OK ? statement(w, stmtIndex) : NULL;
    if (result == RESULT_OK && s == NULL) { setMessage(job, index, sqlite3_errmsg(w->db)); result = RESULT_SQLITE; }
    for (unsigned p = 0; p < params; p++) {
      if (c->json && !take(c, ',')) break;
      Value v;
      if (!readValue(c, &v)) { c->bad = 1; break; }
      if (s == NULL || result != RESULT_OK) continue;
      int position = (int)p + 1;
      if (v.tag == TAG_NULL) sqlite3_bind_null(s, position);
      else if (v.tag == TAG_TEXT) sqlite3_bind_text(s, position, v.text, (int)v.length, SQLITE_STATIC);
      else if (v.number == (double)(int64_t)v.number) sqlite3_bind_int64(s, position, (int64_t)v.number);
      else sqlite3_bind_double(s, position, v.number);
    }
    if (c->json && !take(c, ']')) c->bad = 1;
    if (c->bad || s == NULL || result != RESULT_OK) continue;
    int rc = sqlite3_step(s);
    int row = rc == SQLITE_ROW;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      setMessage(job, index, sqlite3_errmsg(w->db));
      result = RESULT_SQLITE;
    } else if ((check == CHECK_ONE_CHANGE && sqlite3_changes(w->db) != 1) || (check == CHECK_NO_ROW && row) || (check == CHECK_ROW && !row)) {
      result = (int32_t)k;
    }
    sqlite3_reset(s);
  }
  if (c->json && !c->bad && !take(c, ']')) c->bad = 1;
  if (c->bad) { setMessage(job, index, "malformed operation encoding"); return RESULT_SQLITE; }
  return result;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void failAll(Job *jobs, const char *message) {
  for (Job *job = jobs; job != NULL; job = job->next) {
    for (uint32_t i = 0; i < job->count; i++) { job->results[i] = RESULT_TRANSACTION; setMessage(job, i, message); }
  }
}

// One transaction over every job in the list.
static void commitJobs(Writer *w, Job *jobs, unsigned operations) {
  int alone = operations == 1;
  int rc = runControl(w, BEGIN);
  if (rc != SQLITE_OK) { failAll(jobs, sqlite3_errmsg(w->db)); return; }
  for (Job *job = jobs; job != NULL; job = job->next) {
    Cursor c = { job->bytes, job->bytes + job->length, job->json, 0 };
    uint32_t count = job->json ? job->count : readUnsigned(&c, 4);
    if (job->json && !take(&c, '[')) c.bad = 1;
    for (uint32_t i = 0; i < job->count; i++) {
      if (c.bad || i >= count || (job->json && i > 0 && !take(&c, ','))) {
        job->results[i] = RESULT_SQLITE; setMessage(job, i, "malformed group encoding"); c.bad = 1; continue;
      }
      if (!alone) runControl(w, SAVEPOINT);
      int32_t result = runOperation(w, &c, job, i);
      job->results[i] = result;
      if (alone) continue;
      if (result != RESULT_OK) runControl(w, ROLLBACK_TO);
      runControl(w, RELEASE);
    }
  }
  if (alone && jobs->results[0] != RESULT_OK) { runControl(w, ROLLBACK); return; }
  rc = runControl(w, COMMIT);
  if (rc != SQLITE_OK) {
    char *message = copyText(sqlite3_errmsg(w->db));
    runControl(w, ROLLBACK);
    failAll(jobs, message);
    free(message);
  }
}

static void *writerMain(void *argument) {
  Writer *w = argument;
  for (;;) {
    pthread_mutex_lock(&w->lock);
    while (w->head == NULL && !w->closing) pthread_cond_wait(&w->wake, &w->lock);
    if (w->head == NULL) { pthread_mutex_unlock(&w->lock); break; }
    // Every group waiting joins this transaction, up to mergedOperationsMax.
    Job *jobs = w->head, *last = w->head;
    unsigned operations = last->count;
    while (last->next != NULL && operations + last->next->count <= mergedOperationsMax) { last = last->next; operations += last->count; }
    w->head = last->next;
    if (w->head == NULL) w->tail = NULL;
    last->next = NULL;
    pthread_mutex_unlock(&w->lock);

    double started = now();
    commitJobs(w, jobs, operations);
    w->transactions += 1;
    w->operations += operations;
    w->busySeconds += now() - started;
    for (Job *job = jobs, *next; job != NULL; job = next) {
      next = job->next;
      job->next = NULL;
      free(job->bytes);
      job->bytes = NULL;
      napi_call_threadsafe_function(w->settled, job, napi_tsfn_nonblocking);
    }
  }
  for (uint32_t i = 0; i < w->statementCount; i++) sqlite3_finalize(w->statements[i]);
  for (int i = 0; i < CONTROLS; i++) sqlite3_finalize(w->control[i]);
  sqlite3_close(w->db);
  w->db = NULL;
  return NULL;
}

// -- the JavaScript side ---------------------------------------------------------

static void freeJob(Job *job) {
  if (job->messages != NULL) {
    for (uint32_t i = 0; i < job->count; i++) free(job->messages[i]);
    free(job->messages);
  }
  free(job->results);
  free(job->bytes);
  free(job);
}

static void deliver(napi_env env, napi_value callback, void *context, void *data) {
  (void)context;
  Job *job = data;
  if (env != NULL && callback != NULL) {
    napi_value args[3], buffer, undefined;
    void *memory;
    napi_get_undefined(env, &undefined);
    napi_create_uint32(env, job->group, &args[0]);
    napi_create_arraybuffer(env, job->count * sizeof(int32_t), &memory, &buffer);
    memcpy(memory, job->results, job->count * sizeof(int32_t));
    napi_create_typedarray(env, napi_int32_array, job->count, buffer, 0, &args[1]);
    if (job->messages == NULL) args[2] = undefined;
    else {
      napi_create_array_with_length(env, job->count, &args[2]);
      for (uint32_t i = 0; i < job->count; i++) {
        if (job->messages[i] == NULL) continue;
        napi_value text;
        napi_create_string_utf8(env, job->messages[i], NAPI_AUTO_LENGTH, &text);
        napi_set_element(env, args[2], i, text);
      }
    }
    napi_call_function(env, undefined, callback, 3, args, NULL);
  }
  freeJob(job);
}

static napi_value throwError(napi_env env, const char *message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

static Writer *writerOf(napi_env env, napi_value handle) {
  void *data = NULL;
  if (napi_get_value_external(env, handle, &data) != napi_ok || data == NULL) return NULL;
  Writer *w = data;
  return w->closed ? NULL : w;
}

static char *stringArgument(napi_env env, napi_value value) {
  size_t length;
  if (napi_get_value_string_utf8(env, value, NULL, 0, &length) != napi_ok) return NULL;
  char *text = malloc(length + 1);
  napi_get_value_string_utf8(env, value, text, length + 1, &length);
  return text;
}

static napi_value jsOpen(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 5) return throwError(env, "open(path, synchronous, cacheKib, sql, onSettled)");
  char *path = stringArgument(env, argv[0]);
  char *synchronous = stringArgument(env, argv[1]);
  int32_t cacheKib = 2000;
  napi_get_value_int32(env, argv[2], &cacheKib);
  if (path == NULL || synchronous == NULL) { free(path); free(synchronous); return throwError(env, "open: path and synchronous must be strings"); }
  Writer *w = calloc(1, sizeof(Writer));
  int rc = sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  free(path);
  char pragmas[256];
  snprintf(pragmas, sizeof pragmas, "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = %s; PRAGMA cache_size = -%d;",
           strcmp(synchronous, "FULL") == 0 ? "FULL" : "NORMAL", cacheKib);
  free(synchronous);
  if (rc == SQLITE_OK) rc = sqlite3_exec(w->db, pragmas, NULL, NULL, NULL);
  for (int i = 0; rc == SQLITE_OK && i < CONTROLS; i++) rc = sqlite3_prepare_v3(w->db, controlSql[i], -1, SQLITE_PREPARE_PERSISTENT, &w->control[i], NULL);
  if (rc != SQLITE_OK) {
    char message[512];
    snprintf(message, sizeof message, "cannot open the store: %s", w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
    for (int i = 0; i < CONTROLS; i++) sqlite3_finalize(w->control[i]);
    sqlite3_close(w->db);
    free(w);
    return throwError(env, message);
  }
  uint32_t count = 0;
  napi_get_array_length(env, argv[3], &count);
  w->statementCount = count;
  w->sql = calloc(count, sizeof(char *));
  w->statements = calloc(count, sizeof(sqlite3_stmt *));
  for (uint32_t i = 0; i < count; i++) {
    napi_value element;
    napi_get_element(env, argv[3], i, &element);
    w->sql[i] = stringArgument(env, element);
  }
  napi_value name;
  napi_create_string_utf8(env, "phronomy-native-writer", NAPI_AUTO_LENGTH, &name);
  napi_create_threadsafe_function(env, argv[4], NULL, name, 0, 1, NULL, NULL, NULL, deliver, &w->settled);
  napi_unref_threadsafe_function(env, w->settled);
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->wake, NULL);
  pthread_create(&w->thread, NULL, writerMain, w);
  napi_value handle;
  napi_create_external(env, w, NULL, NULL, &handle);
  return handle;
}

static napi_value jsSubmit(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  Writer *w = argc == 4 ? writerOf(env, argv[0]) : NULL;
  if (w == NULL) return throwError(env, "submit(handle, group, count, payload) on an open writer");
  Job *job = calloc(1, sizeof(Job));
  napi_get_value_uint32(env, argv[1], &job->group);
  napi_get_value_uint32(env, argv[2], &job->count);
  bool isBuffer = false;
  napi_is_buffer(env, argv[3], &isBuffer);
  if (isBuffer) {
    void *data;
    size_t length;
    napi_get_buffer_info(env, argv[3], &data, &length);
    job->bytes = malloc(length + 1);
    memcpy(job->bytes, data, length);
    job->bytes[length] = 0;
    job->length = length;
  } else {
    job->json = 1;
    size_t length;
    if (napi_get_value_string_utf8(env, argv[3], NULL, 0, &length) != napi_ok) { free(job); return throwError(env, "submit: payload must be a Buffer or a string"); }
    job->bytes = malloc(length + 1);
    napi_get_value_string_utf8(env, argv[3], job->bytes, length + 1, &length);
    job->length = length;
  }
  if (job->count == 0) { freeJob(job); return throwError(env, "submit: a group holds at least one operation"); }
  job->results = malloc(job->count * sizeof(int32_t));
  pthread_mutex_lock(&w->lock);
  if (w->tail == NULL) w->head = job; else w->tail->next = job;
  w->tail = job;
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

static napi_value jsRef(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  Writer *w = argc == 2 ? writerOf(env, argv[0]) : NULL;
  if (w == NULL) return throwError(env, "ref(handle, boolean) on an open writer");
  bool keep = false;
  napi_get_value_bool(env, argv[1], &keep);
  if (keep) napi_ref_threadsafe_function(env, w->settled);
  else napi_unref_threadsafe_function(env, w->settled);
  return NULL;
}

static napi_value jsStatistics(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result, value;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void *data = NULL;
  if (argc < 1 || napi_get_value_external(env, argv[0], &data) != napi_ok) return throwError(env, "statistics(handle)");
  Writer *w = data;
  napi_create_array_with_length(env, 3, &result);
  double figures[3] = { w->transactions, w->operations, w->busySeconds };
  for (uint32_t i = 0; i < 3; i++) { napi_create_double(env, figures[i], &value); napi_set_element(env, result, i, value); }
  return result;
}

static napi_value jsClose(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  Writer *w = argc == 1 ? writerOf(env, argv[0]) : NULL;
  if (w == NULL) return NULL; // idempotent
  pthread_mutex_lock(&w->lock);
  w->closing = 1;
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL); // the writer finishes every group it was given
  w->closed = 1;
  napi_release_threadsafe_function(w->settled, napi_tsfn_release); // settlements queued are still delivered
  for (uint32_t i = 0; i < w->statementCount; i++) free(w->sql[i]);
  free(w->sql);
  free(w->statements);
  pthread_mutex_destroy(&w->lock);
  pthread_cond_destroy(&w->wake);
  // The Writer itself stays (the external points at it): a few hundred bytes per closed writer.
  return NULL;
}

static napi_value initialize(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
    { "open", NULL, jsOpen, NULL, NULL, NULL, napi_enumerable, NULL },
    { "submit", NULL, jsSubmit, NULL, NULL, NULL, napi_enumerable, NULL },
    { "ref", NULL, jsRef, NULL, NULL, NULL, napi_enumerable, NULL },
    { "statistics", NULL, jsStatistics, NULL, NULL, NULL, napi_enumerable, NULL },
    { "close", NULL, jsClose, NULL, NULL, NULL, napi_enumerable, NULL },
  };
  napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, initialize)
