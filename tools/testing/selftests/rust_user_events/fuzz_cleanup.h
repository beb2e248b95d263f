// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: the end of a run: every trigger, enable and fz* event taken
 * away again (quiescing busy events by name), and what is left reported.
 * Part of fuzz_test.c, which includes it once after its shared state; not a
 * header of its own: it uses that file's types, state and helpers.
 */
#ifndef FUZZ_CLEANUP_H
#define FUZZ_CLEANUP_H

/*
 * Removes every trigger @path lists: "!" + the listed command, cut after the
 * target event for enable_event/disable_event; a hist trigger is removed by
 * the spec it was set with, so each known one is tried.
 */
static int clear_triggers(const char *path)
{
	char buf[4096], text[300];
	int ret = 0;

	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
		if (l[0] == '#' || l[0] == '\0')
			continue;
		if (!strncmp(l, "hist:", 5)) {
			for (size_t i = 0; i < NTRIGGERS; i++) {
				if (strncmp(triggers[i], "hist:", 5))
					continue;
				text[0] = '!';
				snprintf(text + 1, sizeof(text) - 1, "%s", triggers[i]);
				write_str(path, O_APPEND, text, strlen(text));
			}
			continue;
		}
		/* "enable_event:system:event:unlimited", "stacktrace:unlimited" */
		char *cut = l;

		for (int colons = strncmp(l, "stacktrace", 10) ? 3 : 1; cut && colons; colons--)
			cut = strchr(cut + 1, ':');
		if (cut)
			*cut = '\0';
		snprintf(text, sizeof(text), "!%s", l);
		int r = write_str(path, O_APPEND, text, strlen(text));

		if (r < 0)
			ret = r;
	}
	return ret;
}

/* Disables, unfilters and untriggers the event @system/@name under @base. */
static void quiesce_event(const char *base, const char *system, const char *name)
{
	char path[600];

	snprintf(path, sizeof(path), "%sevents/%s/%s/enable", base, system, name);
	write_str(path, O_TRUNC, "0", 1);
	snprintf(path, sizeof(path), "%sevents/%s/%s/filter", base, system, name);
	write_str(path, O_TRUNC, "0", 1);
	snprintf(path, sizeof(path), "%sevents/%s/%s/trigger", base, system, name);
	clear_triggers(path);
}

/*
 * Disables, unfilters and untriggers every fz* event under @base. Events the workers left are
 * deleted meanwhile, asynchronously, and a directory read may skip an entry when an earlier one
 * goes: the cleanup quiesces what is left busy again by name.
 */
static void quiesce(const char *base)
{
	static const char *const systems[] = { "user_events", "user_events_multi" };
	char path[600];

	for (int s = 0; s < 2; s++) {
		DIR *d;
		struct dirent *de;

		snprintf(path, sizeof(path), "%sevents/%s/enable", base, systems[s]);
		write_str(path, O_TRUNC, "0", 1);
		snprintf(path, sizeof(path), "%sevents/%s", base, systems[s]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (strncmp(de->d_name, "fz", 2))
				continue;
			quiesce_event(base, systems[s], de->d_name);
		}
		closedir(d);
	}
}

/* Names (registered names) of the user events dynamic_events lists; count or -1. */
static int leftover_events(char names[][520], int max)
{
	char *buf = slurp(TRACEFS "dynamic_events", 8 << 20);
	int n = 0;

	if (!buf)
		return -1;
	for (char *l = buf, *next; l && *l; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		/*
		 * Every user event: the fuzzer runs alone, and its random-byte REGs
		 * make persistent events of any name (a leftover pins the module).
		 */
		if (strncmp(l, "u:", 2))
			continue;
		l += 2;
		l[strcspn(l, " ")] = '\0';
		if (n < max)
			snprintf(names[n], 520, "%s", l);
		n++;
	}
	free(buf);
	return n;
}

/*
 * Prints the triggers user_events/@name still lists after the cleanup's directory pass, with
 * what its targets' ids say; true if it lists any.
 */
static int busy_with_triggers(const char *name)
{
	char path[600], buf[4096];
	int any = 0;

	snprintf(path, sizeof(path), TRACEFS "events/user_events/%.520s/trigger", name);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
		if (l[0] == '#')
			continue;
		printf("# cleanup: %s kept a trigger past the directory pass: %.200s\n", name, l);
		explain_trigger_target(l);
		any = 1;
	}
	return any;
}

/* Deletes every user event; 0 when none is left. */
static int cleanup(char *why, size_t whylen)
{
	static char names[256][520];
	uint64_t until;
	int fd, n = -1, read_errno = 0, shown = 0;

	quiesce(TRACEFS);
	quiesce(INSTANCE_DIR);
	for (int i = 0; i < 50 && rmdir(TRACEFS "instances/" INSTANCE) && errno == EBUSY; i++)
		usleep(20000);
	fd = open(DATA_FILE, O_RDWR);
	/* Bounded: non-persistent events go when their last reference does (asynchronously). */
	until = now_ms() + 60000;
	while (now_ms() < until) {
		n = leftover_events(names, 256);
		if (n < 0) {
			read_errno = errno;
			usleep(20000);
			continue;
		}
		if (n == 0)
			break;
		for (int i = 0; i < n && i < 256; i++) {
			if (!ioctl(fd, DIAG_IOCSDEL, names[i]) || errno == ENOENT)
				continue;
			if (errno != EBUSY)
				break;
			/* Busy: perhaps one the directory reads skipped. */
			if (shown < 8 && busy_with_triggers(names[i]))
				shown++;
			quiesce_event(TRACEFS, "user_events", names[i]);
		}
		usleep(20000);
	}
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		size_t len = snprintf(why, whylen, "%d events of the fuzzer left in dynamic_events:", n);

		for (int i = 0; i < n && i < 8 && len < whylen; i++)
			len += snprintf(why + len, whylen - len, " %s", names[i]);
		return -1;
	}
	if (n < 0) {
		snprintf(why, whylen, "cannot read dynamic_events: %s", strerror(read_errno));
		return -1;
	}
	return 0;
}

/* Prints the ftrace state of every fz* event under @base that is enabled or has triggers. */
static void dump_ftrace_state(const char *base)
{
	static const char *const systems[] = { "user_events", "user_events_multi" };
	char path[600], buf[4096];
	int ret;

	for (int s = 0; s < 2; s++) {
		DIR *d;
		struct dirent *de;

		snprintf(path, sizeof(path), "%sevents/%s", base, systems[s]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%sevents/%s/%s/enable", base, systems[s], de->d_name);
			/* "1", or "0*"/"1*" in soft mode (an enable_event trigger's target). */
			if (read_file(path, buf, sizeof(buf)) > 0 && (buf[0] != '0' || strchr(buf, '*')))
				printf("# %s: %.20s\n", path, buf);
			snprintf(path, sizeof(path), "%sevents/%s/%s/trigger", base, systems[s], de->d_name);
			if (read_file(path, buf, sizeof(buf)) <= 0)
				continue;
			for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
				if (l[0] != '#') {
					printf("# %s: %.200s\n", path, l);
					explain_trigger_target(l);
				}
			/* What a removal of what is left does now (the cleanup's did not). */
			ret = clear_triggers(path);
			if (read_file(path, buf, sizeof(buf)) > 0 && buf[0] != '#')
				printf("# %s: still there after another removal (%s)\n", path,
				       strerror(-ret));
		}
		closedir(d);
	}
	snprintf(path, sizeof(path), "%sset_event", base);
	if (read_file(path, buf, sizeof(buf)) > 0)
		for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
			printf("# %s: %.200s\n", path, l);
}

/*
 * The module's reference count after the cleanup, once the asynchronous puts (deferred
 * destroys, enablers' frees) had a moment: up to 10 s of the reference machine for it to reach
 * 0. -ENOENT when rust_user_events is not loaded (the user_events of another kernel), -EIO
 * when its count cannot be read.
 */
static int module_refs(void)
{
	uint64_t until = now_ms() + rue_bound_ms(10000);
	char buf[64];
	int refs;

	if (!exists(MODULE_DIR))
		return -ENOENT;
	for (;;) {
		if (read_file(MODULE_DIR "refcnt", buf, sizeof(buf)) <= 0)
			return -EIO;
		refs = atoi(buf);
		if (refs < 0)
			return -EIO;
		if (refs == 0 || now_ms() >= until)
			return refs;
		usleep(100000);
	}
}

/*
 * What else holds the module: any user event left (of anyone) and, when the module's
 * reference count @refs is not 0, the ftrace state and user_events_status.
 */
static void report_leftovers(int refs)
{
	char *dyn;

	if (refs > 0) {
		printf("# rust_user_events refcnt is %d after the cleanup\n", refs);
		printf("# instance %s\n", access(INSTANCE_DIR, F_OK) ? "removed" : "still there");
		dump_ftrace_state(TRACEFS);
		dump_ftrace_state(INSTANCE_DIR);
	}
	dyn = slurp(TRACEFS "dynamic_events", 1 << 20);
	if (dyn) {
		int shown = 0;

		for (char *l = strtok(dyn, "\n"); l && shown < 20; l = strtok(NULL, "\n")) {
			if (!strncmp(l, "u:", 2)) {
				printf("# left in dynamic_events: %.200s\n", l);
				shown++;
			}
		}
		free(dyn);
	}
	if (refs > 0) {
		char *st = slurp(TRACEFS "user_events_status", 1 << 20);

		if (st) {
			for (char *l = strtok(st, "\n"); l; l = strtok(NULL, "\n"))
				printf("# user_events_status: %.200s\n", l);
			free(st);
		}
	}
}

#endif /* FUZZ_CLEANUP_H */
