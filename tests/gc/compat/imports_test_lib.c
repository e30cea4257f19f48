/* Imports GC_ names for the walk over loaded objects to find: one nobody
   defines, one weak, one the test program defines. */
int GC_walk_test_missing(int);
__attribute__((weak)) int GC_walk_test_weak(int);
int GC_walk_test_provided(int);

int imports_test_call_missing(int x) { return GC_walk_test_missing(x); }
int imports_test_call_weak(int x) { return GC_walk_test_weak ? GC_walk_test_weak(x) : -1; }
int imports_test_call_provided(int x) { return GC_walk_test_provided(x); }
