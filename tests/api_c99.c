/*
 * api_c99.c — the public header compiled as strict C99 (-std=c99 -pedantic -Wall -Werror)
 * (and, through api_cxx.cpp, as C++11)
 * and linked against the shared library: the declarations are usable from C99 and the
 * library agrees with the header.
 */
#include <stdio.h>
#include <string.h>

#include "flashc.h"

int main(void) {
  flashc_attn_fwd_params fwd;
  flashc_attn_bwd_params bwd;
  flashc_attn_combine_params combine;
  flashc_gemm_params gemm;
  flashc_device_info info;
  flashc_handle_t handle = NULL;
  flashc_status status;
  int failures = 0;

  flashc_attn_fwd_params_init(&fwd);
  flashc_attn_bwd_params_init(&bwd);
  flashc_attn_combine_params_init(&combine);
  flashc_gemm_params_init(&gemm);
  flashc_device_info_init(&info);
  if (fwd.struct_size != sizeof fwd || bwd.struct_size != sizeof bwd || combine.struct_size != sizeof combine ||
      gemm.struct_size != sizeof gemm || info.struct_size != sizeof info) {
    printf("FAIL struct_size set by the init functions\n");
    ++failures;
  }
  if (flashc_version() != FLASHC_VERSION) {
    printf("FAIL flashc_version() %d != FLASHC_VERSION %d\n", flashc_version(), FLASHC_VERSION);
    ++failures;
  }
  if (strcmp(flashc_status_name(FLASHC_STATUS_NULL_POINTER), "FLASHC_STATUS_NULL_POINTER") != 0) {
    printf("FAIL flashc_status_name\n");
    ++failures;
  }
  status = flashc_create(&handle, FLASHC_DEVICE_CPU);
  if (status != FLASHC_STATUS_SUCCESS) {
    printf("FAIL flashc_create(CPU): %s\n", flashc_last_error());
    ++failures;
  } else {
    if (flashc_get_device_info(handle, &info) != FLASHC_STATUS_SUCCESS || info.backend != FLASHC_BACKEND_CPU) {
      printf("FAIL flashc_get_device_info\n");
      ++failures;
    }
    if (flashc_gemm(handle, NULL, NULL, 0, NULL) != FLASHC_STATUS_NULL_POINTER) {
      printf("FAIL flashc_gemm(NULL params)\n");
      ++failures;
    }
    flashc_destroy(handle);
  }
  printf("%s api_c99: flashc %d (%s)\n", failures ? "FAIL" : "PASS", flashc_version(), flashc_build_info());
  return failures ? 1 : 0;
}
