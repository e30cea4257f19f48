/* dlopen (GC_dlopen, through GC_THREADS) of a library that imports what
   adsm does not serve: refused with NULL, and the program goes on. */
#define GC_THREADS
#include <gc.h>
#include <stdio.h>

int main(int argc, char **argv) {
    GC_INIT();
    if (argc < 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (h) {
        printf("loaded: not refused\n");
        return 1;
    }
    void *p = GC_MALLOC(64);
    GC_gcollect();
    printf("refused as it should be; the program goes on (%p)\n", p);
    return 0;
}
