/* A library the collector's tests dlopen(): its data and bss must be among
 * the data segments, and its thread-local storage (dynamic: the loader
 * allocates it at a thread's first use) among a thread's roots. */
static int lib_data = 42;
static int lib_bss;

int *gc_test_lib_data(void) { return &lib_data; }
int *gc_test_lib_bss(void) { return &lib_bss; }

static __thread void *lib_tls[4];
void **gc_test_lib_tls(void) { return lib_tls; }

/* Its constructor adopts a collected object the loading test names in
 * ADSM_GC_TEST_LIB_ADOPT (the address xor kMask, so that no root of the test
 * holds it): from then on only this library's data points to it. */
#include <stdint.h>
#include <stdlib.h>
static void *adopted;
void **gc_test_lib_adopted(void) { return &adopted; }
__attribute__((constructor)) static void adopt(void) {
    const char *masked = getenv("ADSM_GC_TEST_LIB_ADOPT");
    if (masked) adopted = (void *)(uintptr_t)(strtoull(masked, NULL, 16) ^ 0x5a5a5a5a5a5a5a5aull);
}
