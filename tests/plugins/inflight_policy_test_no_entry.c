/* A library that exports a misspelled entry point: the engine must say which symbol is missing. */
#include "inflight_policy.h"

INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry_point(void) { return 0; }
