// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: random field lists, names and REG texts (the grammar).
 * Part of fuzz_test.c, which includes it once after its shared state; not a
 * header of its own: it uses that file's types, state and helpers.
 */
#ifndef FUZZ_GEN_H
#define FUZZ_GEN_H

/* ---------------------------------------------------------------- grammar */

static const struct { const char *type; int size; } scalars[] = {
	{ "u8", 1 }, { "s8", 1 }, { "u16", 2 }, { "s16", 2 }, { "u32", 4 }, { "s32", 4 },
	{ "u64", 8 }, { "s64", 8 }, { "char", 1 }, { "unsigned char", 1 }, { "int", 4 },
	{ "unsigned int", 4 }, { "short", 2 }, { "unsigned short", 2 },
};

static const char *const loc_types[] = {
	"__data_loc char[]", "__rel_loc char[]", "__data_loc unsigned char[]", "__rel_loc unsigned char[]",
};

static const char *const bad_types[] = {
	"long", "unsigned long", "bool", "__u32", "pid_t", "u32[4]", "char [4]", "unsigned",
	"char[]", "char[0]", "char[1025]", "char[aa]", "char[0x0000000000001]", "__data_loc",
	"__rel_loc u32", "__data_loc cpumask_t", "struct", "u128", "char[-1]", "char[+8]",
	"__data_loc char", "char[20]xyz", "unsigned char[010]", "struct  foo",
};

static const char *const field_names[MAXF] = { "a", "b", "c", "d", "e", "f", "g", "h" };

#define APPEND(...)                                                         \
	do {                                                                \
		int _n = snprintf(out + len, room > len ? room - len : 0, __VA_ARGS__); \
		if (_n > 0)                                                 \
			len = len + _n < room ? len + _n : room;            \
	} while (0)

/* One valid field, described into @lay; returns the text length. */
static size_t gen_field(struct tctx *t, char *out, size_t room, int i, struct layout *lay)
{
	size_t len = 0;
	unsigned int k = rnd(t, 100), n;

	if (k < 55) {
		n = rnd(t, sizeof(scalars) / sizeof(scalars[0]));
		APPEND("%s %s", scalars[n].type, field_names[i]);
		lay->kind[i] = F_PLAIN;
		lay->size[i] = scalars[n].size;
	} else if (k < 72) {
		const char *u = chance(t, 30) ? "unsigned " : "";

		n = 1 + rnd(t, chance(t, 90) ? 32 : 1024);
		if (chance(t, 10))
			APPEND("%schar[0x%x] %s", u, n, field_names[i]);
		else if (chance(t, 10) && n < 0777)
			APPEND("%schar[0%o] %s", u, n, field_names[i]);
		else
			APPEND("%schar[%u] %s", u, n, field_names[i]);
		lay->kind[i] = F_PLAIN;
		lay->size[i] = n;
	} else if (k < 90) {
		n = rnd(t, 4);
		APPEND("%s %s", loc_types[n], field_names[i]);
		lay->kind[i] = strstr(loc_types[n], "__rel_loc") ? F_RLOC : F_DLOC;
		lay->size[i] = 4;
	} else {
		n = 1 + rnd(t, 48);
		APPEND("struct %s %s %u", chance(t, 50) ? "foo" : "bar_t", field_names[i], n);
		lay->kind[i] = F_PLAIN;
		lay->size[i] = n;
	}
	return len;
}

/*
 * A field list into @out (NUL-terminated) and its layout into @lay; with
 * @mutate, sometimes broken in one of the ways the grammar cares about.
 */
static void gen_args(struct tctx *t, char *out, size_t room, struct layout *lay, int mutate)
{
	size_t len = 0;
	int n = rnd(t, 100) < 12 ? 0 : 1 + rnd(t, chance(t, 80) ? 3 : MAXF);

	memset(lay, 0, sizeof(*lay));
	lay->known = 1;
	lay->n = n;
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i) {
			unsigned int s = rnd(t, 100);

			APPEND("%s", s < 70 ? "; " : s < 90 ? ";" : ";  ");
		}
		len += gen_field(t, out + len, room - len, i, lay);
	}
	if (!mutate || !chance(t, 25))
		return;
	switch (rnd(t, 11)) {
	case 0:
		APPEND(";");			/* valid, and matches */
		return;
	case 1:
		APPEND(";;");			/* parses, never matches itself */
		return;
	case 2:
		APPEND(" ");			/* trailing space */
		break;
	case 3: {				/* a double space or a tab in a field */
		char *sp = strchr(out, ' ');

		if (sp && len + 1 < room) {
			if (chance(t, 50)) {
				memmove(sp + 1, sp, len - (sp - out) + 1);
				len++;
			} else {
				*sp = '\t';
			}
		}
		break;
	}
	case 4:
		if (len)
			out[rnd(t, len)] = (char)(1 + rnd(t, 255));
		break;
	case 5:
		if (len) {
			len = rnd(t, len);
			out[len] = '\0';
		}
		break;
	case 6:
		APPEND("%s%s %s", n ? "; " : "", bad_types[rnd(t, sizeof(bad_types) / sizeof(bad_types[0]))],
		       field_names[n < MAXF ? n : 0]);
		break;
	case 7:
		APPEND("%su32 %s 4", n ? "; " : "", field_names[n < MAXF ? n : 0]);
		break;
	case 8:
		APPEND("%sstruct foo %s", n ? "; " : "", field_names[n < MAXF ? n : 0]);
		break;
	case 9:
		APPEND("%sstruct foo %s 0", n ? "; " : "", field_names[n < MAXF ? n : 0]);
		break;
	default:
		APPEND("%su32 %s", n ? "; " : "", n ? "a" : "a; u32 a");	/* duplicate names */
		break;
	}
	lay->known = 0;
}

static void pool_name(char *buf, size_t len, int k)
{
	snprintf(buf, len, "fz_%d", k);
}

/* A random name: "fzr_" and bytes that are neither NUL, space, newline, '/' nor ':'. */
static void random_name(struct tctx *t, char *buf, size_t room, size_t n)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789_.-*%?[\\\t\xc3\xa9\xff";
	size_t i = 0;

	if (room < 6)
		return;
	memcpy(buf, "fzr_", 4);
	for (i = 4; i < 4 + n && i + 1 < room; i++)
		buf[i] = chance(t, 90) ? set[rnd(t, 37)] : set[rnd(t, sizeof(set) - 1)];
	buf[i] = '\0';
}

/*
 * The name_args of a REG, NUL-terminated in @out; @lay gets the layout when it
 * is known. Mostly pool names with their field lists, so that events collide.
 */
static void gen_reg_text(struct tctx *t, char *out, size_t room, struct layout *lay, int *pool_idx)
{
	char name[600], args[300];
	size_t len = 0;
	unsigned int r = rnd(t, 100);
	int k = rnd(t, NNAMES);

	*pool_idx = -1;
	memset(lay, 0, sizeof(*lay));
	if (chance(t, 70)) {
		const struct variant *v = &pool[k][rnd(t, NVARIANTS)];

		snprintf(args, sizeof(args), "%s", v->text);
		*lay = v->lay;
	} else {
		gen_args(t, args, sizeof(args), lay, 1);
	}
	if (r < 80) {
		pool_name(name, sizeof(name), k);
		*pool_idx = k;
	} else if (r < 88) {
		random_name(t, name, sizeof(name), 1 + rnd(t, 12));
	} else if (r < 91) {
		snprintf(name, sizeof(name), "fz_%d:%s", k, chance(t, 50) ? "" : "persist");
	} else if (r < 93) {
		snprintf(name, sizeof(name), "u:fz_%d", k);
	} else if (r < 95) {
		random_name(t, name, sizeof(name), 200 + rnd(t, 400));
	} else if (r < 96) {
		name[0] = '\0';
	} else {
		/* fzr_ then random bytes: spaces split it anywhere. */
		size_t n = 1 + rnd(t, 40), i;

		memcpy(name, "fzr_", 4);
		for (i = 4; i < 4 + n; i++) {
			char c = (char)(1 + rnd(t, 255));

			name[i] = (c == '\n' || c == '/') ? 'x' : c;
		}
		name[i] = '\0';
		lay->known = 0;
	}
	if (args[0])
		APPEND("%s%s%s", name, chance(t, 90) ? " " : chance(t, 50) ? "  " : "\t", args);
	else
		APPEND("%s", name);
	if (len + 1 >= room)
		lay->known = 0;
}

#endif /* FUZZ_GEN_H */
