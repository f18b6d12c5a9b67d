// 00 — the all-gather copy of 00_gather_rows.cu with its timeline records (gather_rows_tl), the
// helper of the timeline suite's sequential and chunked schedules. A helper builds without a
// variant's flags, so this file turns the records on itself; the timed suites launch gather_rows,
// built from 00_gather_rows.cu alone, which records nothing.
#ifndef KL_TIMELINE
#define KL_TIMELINE
#endif
#include "00_gather_rows.cu"
