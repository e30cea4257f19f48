/* A library the collector's tests dlopen(): its data and bss must be among
 * the data segments, and its thread-local storage (dynamic: the loader
 * allocates it at a thread's first use) among a thread's roots. */
static int lib_data = 42;
static int lib_bss;

int *gc_test_lib_data(void) { return &lib_data; }
int *gc_test_lib_bss(void) { return &lib_bss; }

static __thread void *lib_tls[4];
void **gc_test_lib_tls(void) { return lib_tls; }
