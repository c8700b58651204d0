// Callgrind's client requests (valgrind/callgrind.h) as functions Swift can call: zero the counts, dump them under
// a name, and whether the process runs under valgrind. Without the header they do nothing.
#ifndef CCALLGRIND_H
#define CCALLGRIND_H

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
static inline int ccallgrind_running(void) { return RUNNING_ON_VALGRIND ? 1 : 0; }
static inline void ccallgrind_zero(void) { CALLGRIND_ZERO_STATS; }
static inline void ccallgrind_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
#else
static inline int ccallgrind_running(void) { return 0; }
static inline void ccallgrind_zero(void) {}
static inline void ccallgrind_dump(const char *name) { (void)name; }
#endif

#endif
