/*
 * Run under the preload with ADSM_MALLOC_THRESHOLD=64K and
 * ADSM_PROTOCOL=batch.  The program defines getenv itself and answers
 * nothing, as bash's does for a variable it has not imported yet (bash
 * starts the runtime with an allocation made while it imports them).  The
 * runtime must still read its settings from the process's environment.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <adsm.h>

char *getenv(const char *name) {
    (void)name;
    return NULL;
}

int main(void) {
    void *p = malloc(128 << 10);
    size_t (*size_of)(const void *) = (size_t(*)(const void *))dlsym(RTLD_DEFAULT, "adsmGetSize");
    adsmError_t (*info_of)(adsmDeviceInfo *) = (adsmError_t(*)(adsmDeviceInfo *))dlsym(RTLD_DEFAULT, "adsmGetDeviceInfo");
    if (!p || !size_of || !info_of) {
        puts("run it with libadsm preloaded");
        return 2;
    }
    adsmDeviceInfo info;
    memset(&info, 0, sizeof info);
    int failures = 0;
    if (size_of(p) != 128 << 10) {
        puts("a 128 KiB malloc is not shared memory: ADSM_MALLOC_THRESHOLD=64K was not read");
        ++failures;
    }
    if (info_of(&info) != adsmSuccess || strcmp(info.protocol, "batch") != 0) {
        printf("the protocol is '%s', not ADSM_PROTOCOL's batch\n", info.protocol);
        ++failures;
    }
    free(p);
    if (failures == 0) puts("the runtime read its settings past the program's getenv");
    return failures;
}
