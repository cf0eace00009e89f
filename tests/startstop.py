"""A C program that finds its records through __start_myset/__stop_myset and links with --gc-sections.

GNU ld, mold and wild 0.8 keep the `myset` section; lld >= 13 collects it (-z start-stop-gc is its
default) and fails with "undefined symbol: __start_myset" -- a failure of linkwrap's choice, not of the
caller's inputs, so linkwrap must link as asked (tests/test_pipeline_retry.py, tests/server/test_tidy.py).
The program prints the sum of its records' values: 3.
"""
MAIN_C = """#include <stdio.h>
struct item { const char *name; int v; };
extern struct item __start_myset[], __stop_myset[];
int main(void) {
    int n = 0;
    for (struct item *i = __start_myset; i < __stop_myset; i++) n += i->v;
    printf("%d\\n", n);
    return 0;
}
"""
ITEMS_C = """struct item { const char *name; int v; };
__attribute__((used, section("myset"))) static struct item one = {"one", 1};
__attribute__((used, section("myset"))) static struct item two = {"two", 2};
"""
# No small link (docs/policy.md 1.3): the tests' static order, with mold and wild forbidden, starts with lld.
from linkrecords import not_small  # noqa: E402
ITEMS_C = not_small(ITEMS_C)
