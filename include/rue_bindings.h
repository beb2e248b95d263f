/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Input of the module-local bindgen run (see Kbuild): the tracing headers
 * that rust/bindings/bindings_helper.h does not include, and the C shim.
 */
#include <linux/trace_events.h>
#include <linux/tracefs.h>
#include <linux/tracepoint.h>
#include <linux/kprobes.h>
#include "trace.h"		/* kernel/trace/trace.h (private) */
#include "trace_dynevent.h"	/* kernel/trace/trace_dynevent.h (private) */
#include "rue_shim.h"
