#!/bin/sh
# Builds native/build/writer.node (the measured prototype of issue 16 item 4,
# docs/decisions/0044) with gcc against Node's own headers, on the SQLite
# amalgamation better-sqlite3 ships: no crates, no node-gyp download.
#
#   sh native/build.sh            # ≈1 min the first time (sqlite3.o), seconds after
#
# SQLITE_* defines follow better-sqlite3's (deps/defines.gypi) where they
# change behaviour or speed (foreign keys on, WAL's default synchronous,
# no memory statistics, multi-thread mode), so the two writers run the same
# SQLite the same way. FTS5 is in: the store's search index is an FTS5 table
# kept by triggers (docs/decisions/0082), so a writer without it cannot
# write an execution; the other extensions (FTS3, R*Tree, …) are left out.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/native/build"
amalgamation="${SQLITE_AMALGAMATION:-$root/node_modules/better-sqlite3/deps/sqlite3}"
headers="${NODE_HEADERS:-/usr/include/node}"
mkdir -p "$out"
defines="-DSQLITE_DEFAULT_FOREIGN_KEYS=1 -DSQLITE_DEFAULT_MEMSTATUS=0 -DSQLITE_DEFAULT_WAL_SYNCHRONOUS=1 -DSQLITE_DQS=0
  -DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_OMIT_DEPRECATED -DSQLITE_OMIT_PROGRESS_CALLBACK -DSQLITE_OMIT_SHARED_CACHE
  -DSQLITE_THREADSAFE=2 -DSQLITE_USE_URI=0 -DSQLITE_ENABLE_STAT4 -DSQLITE_ENABLE_MATH_FUNCTIONS -DSQLITE_ENABLE_FTS5 -DHAVE_USLEEP=1"
if [ ! -f "$out/sqlite3.o" ] || [ "$amalgamation/sqlite3.c" -nt "$out/sqlite3.o" ] || [ "$0" -nt "$out/sqlite3.o" ]; then
  echo "compiling the SQLite amalgamation (≈1 min)…"
  gcc -O2 -fPIC $defines -c "$amalgamation/sqlite3.c" -o "$out/sqlite3.o"
fi
gcc -O2 -fPIC -Wall -Wextra -shared -DNODE_GYP_MODULE_NAME=writer -I"$headers" -I"$amalgamation" \
  "$root/native/writer.c" "$out/sqlite3.o" -o "$out/writer.node" -lpthread -lm
echo "built $out/writer.node"
