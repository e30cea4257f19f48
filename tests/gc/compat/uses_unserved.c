/* Imports a function of bdwgc's that adsm does not serve. */
#include <gc.h>
#include <stdio.h>

int main(void) {
    GC_INIT();
    struct GC_prof_stats_s s;
    GC_get_prof_stats(&s, sizeof s);
    printf("ran: heap %lu\n", (unsigned long)s.heapsize_full);
    return 0;
}
