/* A library the collector's tests dlopen(): its data and bss must be among
 * the data segments. */
static int lib_data = 42;
static int lib_bss;

int *gc_test_lib_data(void) { return &lib_data; }
int *gc_test_lib_bss(void) { return &lib_bss; }
