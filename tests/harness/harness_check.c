/* harness_check.c - the main() of the check-based tests (harness.h), apart from
 * harness.c so that programs without check (the fuzzer) link without it. */
#include "config.h"
#define TH_WITH_CHECK 1
#include "harness.h"

#include <stdlib.h>

int th_check_main(const char *suite, const struct th_case *cases, size_t ncases, int timeout_s)
{
    Suite *s = suite_create(suite);
    for (size_t i = 0; i < ncases; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, timeout_s);
        for (size_t j = 0; cases[i].tests[j]; j++)
            tcase_add_test(tc, cases[i].tests[j]);
        suite_add_tcase(s, tc);
    }
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
