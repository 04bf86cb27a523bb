/*
 * unit_filter — lets one cmocka test of a unit-test executable run alone.
 *
 * Linked into every unit test (tests/CMakeLists.txt): before main() runs,
 * FLOCKD_TEST_FILTER, when set, becomes cmocka's test filter, a pattern
 * with * and ? matched against the test names, e.g.
 *   FLOCKD_TEST_FILTER='*late*' build/tests/unit/test_pool
 * so the test files need no command-line handling of their own.
 *
 * Never: anything but reading that one variable. Threading: runs once,
 * before main(), on the only thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

void unit_filter_install(void) __attribute__((constructor));

void unit_filter_install(void)
{
    const char *pattern = getenv("FLOCKD_TEST_FILTER");
    if (pattern && *pattern)
        cmocka_set_test_filter(pattern);
}
