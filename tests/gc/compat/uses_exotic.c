/* Imports GC_exotic_feature (exotic_lib.c) besides bdwgc's GC_malloc. */
#include <gc.h>
#include <stdio.h>

int GC_exotic_feature(int x);

int main(void) {
    GC_INIT();
    printf("ran with %d, %p\n", GC_exotic_feature(1), GC_MALLOC(8));
    return 0;
}
