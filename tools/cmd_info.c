/*
 * cmd_info.c — `flashc info`: the library's runtime and header versions, its build
 * configuration, the CPU backend and each CUDA device (name, compute capability, SMs,
 * memory, L2) with the kernels each handle can run.
 */
#include <string.h>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "json.h"

#ifdef FLASHC_TOOL_WITH_CUDA
#define TOOL_CUDA_SUPPORT 1
#else
#define TOOL_CUDA_SUPPORT 0
#endif

#define BYTES_PER_GIB (1024.0 * 1024.0 * 1024.0)
#define BYTES_PER_MIB (1024.0 * 1024.0)

/* One backend's entry: its handle's device info and kernel list, or why it could not open. */
typedef struct backend_entry {
  int device;
  flashc_status status;
  char error[600];
  flashc_device_info info;
  char kernels[1024];
} backend_entry;

static void query_backend(int device, backend_entry* entry) {
  memset(entry, 0, sizeof *entry);
  entry->device = device;
  flashc_handle_t handle = NULL;
  entry->status = flashc_create(&handle, device);
  if (entry->status != FLASHC_STATUS_SUCCESS) {
    tool_library_fail(entry->status, "flashc_create");
    snprintf(entry->error, sizeof entry->error, "%s", tool_error_message());
    return;
  }
  flashc_device_info_init(&entry->info);
  entry->status = flashc_get_device_info(handle, &entry->info);
  if (entry->status != FLASHC_STATUS_SUCCESS) {
    tool_library_fail(entry->status, "flashc_get_device_info");
    snprintf(entry->error, sizeof entry->error, "%s", tool_error_message());
  }
  snprintf(entry->kernels, sizeof entry->kernels, "%s", flashc_handle_kernels(handle));
  flashc_destroy(handle);
}

static void print_entry(const backend_entry* e) {
  if (e->device == FLASHC_DEVICE_CPU) printf("CPU backend:   ");
  else printf("device %-7d", e->device);
  if (e->status != FLASHC_STATUS_SUCCESS) {
    printf("error: %s\n", e->error);
    return;
  }
  const flashc_device_info* i = &e->info;
  if (e->device == FLASHC_DEVICE_CPU) {
    printf("%s\n", i->name);
  } else {
    printf("%s, compute capability %d.%d, %d SMs, %.1f GiB, L2 %.1f MiB, shared memory per block %zu KiB\n", i->name,
           i->cc_major, i->cc_minor, i->sm_count, (double)i->global_memory_bytes / BYTES_PER_GIB,
           (double)i->l2_cache_bytes / BYTES_PER_MIB, i->shared_memory_per_block_optin / 1024);
  }
  printf("  kernels:     %s\n", e->kernels);
}

static void write_entry_json(json_writer* w, const backend_entry* e) {
  json_object_begin(w, NULL);
  json_string(w, "backend", e->device == FLASHC_DEVICE_CPU ? "cpu" : "cuda");
  json_int(w, "device", e->device);
  if (e->status != FLASHC_STATUS_SUCCESS) {
    json_string(w, "error", e->error);
  } else {
    json_string(w, "name", e->info.name);
    json_int(w, "cc_major", e->info.cc_major);
    json_int(w, "cc_minor", e->info.cc_minor);
    json_int(w, "sm_count", e->info.sm_count);
    json_int(w, "global_memory_bytes", (long long)e->info.global_memory_bytes);
    json_int(w, "l2_cache_bytes", (long long)e->info.l2_cache_bytes);
    json_int(w, "shared_memory_per_block_optin", (long long)e->info.shared_memory_per_block_optin);
    json_string(w, "kernels", e->kernels);
  }
  json_object_end(w);
}

int cmd_info(int argc, char** argv, int first) {
  static const char prog[] = "flashc info";
  int json = 0;
  const arg_option options[] = {
      {.name = "json", .kind = ARG_FLAG, .value = &json, .help = "print one JSON object"},
      {.name = NULL},
  };
  const arg_section sections[] = {{"Options", options}};
  const arg_command command = {prog, "flashc info [--json]",
                               "Prints the flashc library version (runtime and header), its build configuration, the\n"
                               "CPU backend and each CUDA device with the kernels its handle can run.",
                               sections, 1, NULL};
  switch (args_parse(&command, argc, argv, first)) {
    case ARGS_HELP: args_print_help(&command, stdout); return TOOL_EXIT_OK;
    case ARGS_ERROR: return TOOL_EXIT_USAGE;
    case ARGS_OK: break;
  }

  char runtime_version[32], header_version[32];
  tool_version_string(flashc_version(), runtime_version, sizeof runtime_version);
  tool_version_string(FLASHC_VERSION, header_version, sizeof header_version);
  int versions_match = flashc_version() == FLASHC_VERSION;
  int device_count = 0;
  flashc_status count_status = flashc_get_device_count(&device_count);
  char count_error[600] = "";
  if (count_status != FLASHC_STATUS_SUCCESS) {
    tool_library_fail(count_status, "flashc_get_device_count");
    snprintf(count_error, sizeof count_error, "%s", tool_error_message());
    device_count = 0;
  }

  int failures = count_status != FLASHC_STATUS_SUCCESS;
  json_writer w;
  if (json) {
    json_init(&w, stdout);
    json_object_begin(&w, NULL);
    json_string(&w, "command", "info");
    json_string(&w, "library_version", runtime_version);
    json_string(&w, "header_version", header_version);
    json_bool(&w, "versions_match", versions_match);
    json_string(&w, "build_info", flashc_build_info());
    json_bool(&w, "tool_cuda_support", TOOL_CUDA_SUPPORT);
    json_int(&w, "device_count", device_count);
    if (count_error[0]) json_string(&w, "device_count_error", count_error);
    json_array_begin(&w, "backends");
  } else {
    printf("flashc %s (library %s, header %s%s)\n", runtime_version, runtime_version, header_version,
           versions_match ? "" : " -- MISMATCH: the tool was built against another header");
    printf("build:         %s\n", flashc_build_info());
    printf("tool:          %s\n", TOOL_CUDA_SUPPORT ? "built with CUDA" : "built without CUDA (CPU backend only)");
    if (count_error[0]) printf("CUDA devices:  error: %s\n", count_error);
    else printf("CUDA devices:  %d\n", device_count);
  }
  for (int device = FLASHC_DEVICE_CPU; device < device_count; ++device) {
    backend_entry entry;
    query_backend(device, &entry);
    failures += entry.status != FLASHC_STATUS_SUCCESS;
    if (json) write_entry_json(&w, &entry);
    else print_entry(&entry);
  }
  if (json) {
    json_array_end(&w);
    json_object_end(&w);
  }
  return failures || !versions_match ? TOOL_EXIT_ERROR : TOOL_EXIT_OK;
}
