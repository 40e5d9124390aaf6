/* threads.c — how many threads the CPU backend uses: OpenMP's current maximum (set by
 * OMP_NUM_THREADS or omp_set_num_threads), 1 in a build without OpenMP. Workspace sizes
 * of the CPU backend scale with it. */
#include "cpu/cpu_backend.h"

#ifdef FLASHC_WITH_OPENMP
#include <omp.h>
#endif

int fc_cpu_thread_count(void) {
#ifdef FLASHC_WITH_OPENMP
  const int threads = omp_get_max_threads();
  return threads > 0 ? threads : 1;
#else
  return 1;
#endif
}
