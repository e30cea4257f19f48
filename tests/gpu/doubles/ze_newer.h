/* Level Zero entry points newer than the headers Debian ships (1.4), as
 * the specification declares them: the double exports them and the test
 * program calls them, as a program built against a newer loader would. */
#pragma once

#include <level_zero/ze_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Level Zero 1.6: waits on the host for an immediate list's commands. */
ze_result_t ZE_APICALL zeCommandListHostSynchronize(ze_command_list_handle_t list, uint64_t timeout);

#ifdef __cplusplus
}
#endif
